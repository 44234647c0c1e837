import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  MIN_PRIORITY_FEE,
  feeFields,
  feesOf,
  firstFees,
  gasLimit,
  maxCost,
  refundValue,
  replacementFees,
  tooSmall,
  withinFeeCap,
  type RefundFees,
} from '../../domain/refund-fees';
import {
  dustAtWrite,
  holdBeforeSigning,
  refundDestination,
  unreceivableAddress,
  type RefundRowFacts,
  type RefundRules,
} from '../../domain/refund-policy';

const wei = fc.bigInt({ min: 0n, max: 10n ** 15n });
const eip1559 = fc
  .record({ maxFeePerGas: fc.bigInt({ min: 1n, max: 10n ** 13n }), maxPriorityFeePerGas: fc.bigInt({ min: 0n, max: 10n ** 12n }) })
  .map((f): RefundFees => ({ kind: 'eip1559', ...f }));
const legacy = fc.bigInt({ min: 1n, max: 10n ** 13n }).map((gasPrice): RefundFees => ({ kind: 'legacy', gasPrice }));
const fees = fc.oneof(eip1559, legacy);

describe('domain/refund-fees: what a native refund offers, what its replacement must offer, and what is left to pay back', () => {
  it('when the history has base fees, then the offer is twice the next base fee plus the median tip, the tip never below the floor; without base fees it is the gas price', () => {
    assert.deepEqual(firstFees({ baseFeePerGas: [10n, 20n, 30n], reward: [[5n * 10n ** 9n], [1n], [2n * 10n ** 9n]] }, 7n), {
      kind: 'eip1559',
      maxFeePerGas: 60n + 2n * 10n ** 9n,
      maxPriorityFeePerGas: 2n * 10n ** 9n,
    });
    assert.deepEqual(firstFees({ baseFeePerGas: [1592n], reward: [[0n]] }, 7n), {
      kind: 'eip1559',
      maxFeePerGas: 3184n + MIN_PRIORITY_FEE,
      maxPriorityFeePerGas: MIN_PRIORITY_FEE,
    });
    assert.deepEqual(firstFees({ baseFeePerGas: [] }, 7n), { kind: 'legacy', gasPrice: 7n });
    assert.deepEqual(firstFees({ baseFeePerGas: [0n, 0n] }, 9n), { kind: 'legacy', gasPrice: 9n });
  });

  it('when a refund is replaced, then every fee field rises by at least 10 % and 1 wei (geth and reth refuse less), never below the market, of the same kind, the cap never below the tip', () => {
    fc.assert(
      fc.property(fees, fees, (previous, market) => {
        const next = replacementFees(previous, market);
        assert.equal(next.kind, previous.kind);
        const pairs: Array<[bigint, bigint]> =
          previous.kind === 'legacy' && next.kind === 'legacy'
            ? [[previous.gasPrice, next.gasPrice]]
            : previous.kind === 'eip1559' && next.kind === 'eip1559'
              ? [
                  [previous.maxFeePerGas, next.maxFeePerGas],
                  [previous.maxPriorityFeePerGas, next.maxPriorityFeePerGas],
                ]
              : [];
        for (const [before, after] of pairs) {
          assert.ok(after * 10n >= before * 11n, `${after} is at least 110 % of ${before}`);
          assert.ok(after > before);
        }
        if (next.kind === 'eip1559') {
          assert.ok(next.maxFeePerGas >= next.maxPriorityFeePerGas);
          if (market.kind === 'eip1559') assert.ok(next.maxFeePerGas >= market.maxFeePerGas);
        }
      }),
    );
  });

  it('when a refund pays back a row, then value + gas × fee cap is exactly the amount (never more: the taken deposit and other rows stay), or nothing is paid; too small and the fee cap follow the cost', () => {
    fc.assert(
      fc.property(wei, fc.constantFrom(21_000n, 30_000n, 100_000n), fees, fc.integer({ min: 1, max: 100 }), (amount, gas, f, k) => {
        const value = refundValue(amount, gas, f);
        if (value === undefined) assert.ok(amount <= maxCost(gas, f));
        else {
          assert.ok(value > 0n);
          assert.equal(value + maxCost(gas, f), amount);
        }
        assert.equal(tooSmall(amount, gas, f, k), amount < BigInt(k) * maxCost(gas, f));
        assert.equal(withinFeeCap(amount, gas, f), 2n * maxCost(gas, f) <= amount);
      }),
    );
  });

  it('when fees are recorded on a variant and read back, then they are the same; a gas estimate of a plain transfer stays 21,000, a contract call gets a quarter more', () => {
    fc.assert(fc.property(fees, (f) => assert.deepEqual(feesOf(feeFields(f)), f)));
    assert.equal(gasLimit(21_000n), 21_000n);
    assert.equal(gasLimit(40_000n), 50_000n);
  });
});

describe('domain/refund-policy: which rows the service pays back by itself, and where the money goes', () => {
  const payer = '0x' + 'aa'.repeat(20);
  const chosen = '0x' + 'bb'.repeat(20);
  const row = (over: Partial<RefundRowFacts> = {}): RefundRowFacts => ({
    chain: 'evm:31337',
    amount: '500000000000000000',
    asset: 'native',
    transfers: 1,
    sender: payer,
    payerKind: 'eoa',
    ...over,
  });
  const TOKEN = 'erc20:0x' + 'cc'.repeat(20);
  const rules = (gasAccount = true): RefundRules => ({
    limit: (chain, asset) => (chain !== 'evm:31337' ? undefined : asset === 'native' ? 10n ** 18n : asset === TOKEN ? 1000n : undefined),
    minimum: (_, asset) => (asset === TOKEN ? 10n : undefined),
    gasAccount,
  });

  it('when the execution named a refundAddress, then the refund goes there whoever paid; else to an EOA payer; a contract payer or none waits for a person', () => {
    assert.deepEqual(refundDestination(row(), { refundAddress: chosen }), { to: chosen });
    assert.deepEqual(refundDestination(row({ payerKind: 'contract' }), { refundAddress: chosen }), { to: chosen });
    assert.deepEqual(refundDestination(row(), {}), { to: payer });
    assert.deepEqual(refundDestination(row({ payerKind: 'contract' }), {}), { hold: 'contract-payer' });
    assert.deepEqual(refundDestination(row({ sender: undefined }), {}), { hold: 'no-destination' });
  });

  it("when the owner set a refund address, then it takes its own deposit's transfer and its payer's, before prepare's refundAddress; a stranger's transfer goes where it went", () => {
    const owned = '0x' + '0e'.repeat(20);
    const stranger = '0x' + '5a'.repeat(20);
    const owner = { address: owned, payer, txHash: '0xdeposit' };
    assert.deepEqual(refundDestination(row({ payerKind: 'contract' }), { owner }), { to: owned }, 'the same payer, a contract');
    assert.deepEqual(refundDestination(row({ sender: stranger, txHash: '0xdeposit' }), { owner }), { to: owned }, 'its own deposit');
    assert.deepEqual(refundDestination(row({ sender: undefined, txHash: '0xdeposit' }), { owner }), { to: owned }, 'no payer shown');
    assert.deepEqual(refundDestination(row({ sender: stranger }), { owner }), { to: stranger });
    assert.deepEqual(refundDestination(row({ sender: stranger }), { owner, refundAddress: chosen }), { to: chosen });
    assert.deepEqual(refundDestination(row(), { owner: { ...owner, address: '0x' + '0'.repeat(40) } }), { hold: 'refund-address-refused' });
  });

  it('when a refundAddress or a payer is the zero address or a precompile (0x…01 to 0x…ff), then nothing is paid there; any other address is a destination', () => {
    const low = fc.integer({ min: 0, max: 255 }).map((n) => `0x${n.toString(16).padStart(40, '0')}`);
    fc.assert(
      fc.property(low, (address) => {
        assert.notEqual(unreceivableAddress(address), undefined, address);
        assert.notEqual(unreceivableAddress(address.toUpperCase().replace('0X', '0x')), undefined, address);
        assert.deepEqual(refundDestination(row(), { refundAddress: address }), { hold: 'refund-address-refused' });
        assert.deepEqual(refundDestination(row({ sender: address }), {}), { hold: 'no-destination' });
      }),
    );
    const above = fc.bigInt({ min: 256n, max: 2n ** 160n - 1n }).map((n) => `0x${n.toString(16).padStart(40, '0')}`);
    fc.assert(
      fc.property(above, (address) => {
        assert.equal(unreceivableAddress(address), undefined, address);
        assert.deepEqual(refundDestination(row(), { refundAddress: address }), { to: address });
      }),
    );
    assert.equal(unreceivableAddress(`0x${'0'.repeat(40)}`), 'is the zero address');
  });

  it("when a row is written below its asset's minimum, or a native one below the fee floor of the moment, then it is dust from the start; at or above both it may be paid; rows without a chain or amount are judged later", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: 10n ** 20n }), fc.bigInt({ min: 1n, max: 10n ** 20n }), (amount, floor) => {
        const native = dustAtWrite({ chain: 'evm:31337', amount: String(amount), asset: 'native' }, rules().minimum, floor);
        assert.equal(native, amount < floor ? 'too-small' : undefined);
        // A token's floor is its minimum alone: the gas account pays its fee.
        const token = dustAtWrite({ chain: 'evm:31337', amount: String(amount), asset: TOKEN }, rules().minimum, floor);
        assert.equal(token, amount < 10n ? 'too-small' : undefined);
      }),
    );
    assert.equal(dustAtWrite({ chain: 'evm:31337', amount: '1' }, rules().minimum), undefined, 'no floor known: judged before signing');
    assert.equal(dustAtWrite({ amount: '1' }, rules().minimum, 10n), undefined);
    assert.equal(dustAtWrite({ chain: 'evm:31337' }, rules().minimum, 10n), undefined);
  });

  it("when a row has no chain or amount, is a dust batch, above its asset's limit or of an asset without one, below its minimum, or a token without a gas account, then it is held with that reason; else it may be paid", () => {
    const cases: Array<[Partial<RefundRowFacts>, string | undefined]> = [
      [{}, undefined],
      [{ amount: String(10n ** 18n) }, undefined],
      [{ amount: String(10n ** 18n + 1n) }, 'above-limit'],
      [{ chain: 'evm:1' }, 'above-limit'],
      [{ chain: undefined }, 'off-chain'],
      [{ amount: undefined }, 'off-chain'],
      [{ asset: TOKEN, amount: '1000' }, undefined],
      [{ asset: TOKEN, amount: '10' }, undefined],
      [{ asset: TOKEN, amount: '1001' }, 'above-limit'],
      [{ asset: TOKEN, amount: '1001', approvedBy: 'ops' }, undefined],
      [{ asset: TOKEN, amount: '9' }, 'too-small'],
      [{ asset: 'erc20:0x' + 'dd'.repeat(20), amount: '5' }, 'above-limit'],
      [{ asset: 'other:x' }, 'off-chain'],
      [{ transfers: 3 }, 'too-small'],
      [{ payerKind: 'contract' }, 'contract-payer'],
      [{ sender: undefined }, 'no-destination'],
    ];
    for (const [over, reason] of cases) assert.equal(holdBeforeSigning(row(over), {}, rules()), reason, JSON.stringify(over));
    // Without a gas account a token row that may otherwise be paid waits for one; a native row does not.
    assert.equal(holdBeforeSigning(row({ asset: TOKEN, amount: '100' }), {}, rules(false)), 'no-gas-key');
    assert.equal(holdBeforeSigning(row({ asset: TOKEN, amount: '9' }), {}, rules(false)), 'too-small');
    assert.equal(holdBeforeSigning(row(), {}, rules(false)), undefined);
  });
});
