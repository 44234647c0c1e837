import assert from 'node:assert/strict';
import fc from 'fast-check';
import { payerAt, proveDeposit, type ChainTransaction } from '../../domain/deposit-proof';
import { payerKind } from '../../domain/payer-kind';
import { addressTopic, internalValueTransfers, tokenTransfer, TRANSFER_TOPIC } from '../../domain/transfers';
import { MAX_REFUSED_IN_RECORD, applyDeposit, type DepositTarget, type ExecutionRecord } from '../../domain/execution-state';
import { preparedRecord } from '../support/records';
import { refundsOfRecord } from '../../db/refund-rows';
import { proveOnChain } from '../../lib/chain-transaction';
import type { PublicClient } from 'viem';

const TARGET: DepositTarget = { chain: 'evm:31337', asset: 'native', minAmount: '1000', address: '0x' + 'Ab'.repeat(20) };
const HASH = '0x' + '12'.repeat(32);
/** The deployment's DEPOSIT_TOKENS: the tokens these tests pay targets in. */
const TOKENS = [
  { chain: 'evm:31337', address: '0x' + 'cd'.repeat(20) },
  { chain: 'evm:31337', address: '0x' + 'ee'.repeat(20) },
];
const paid = (over: Partial<ChainTransaction> = {}): ChainTransaction => ({
  to: TARGET.address.toLowerCase(),
  value: '1000',
  blockNumber: 10,
  succeeded: true,
  ...over,
});

describe('domain/deposit-proof: a deposit report is believed only when the chain shows it', () => {
  it('when the chain holds a transfer below minAmount to the address, then it is backed: the money arrived, and the execution refuses it as below-minimum (owed back)', () => {
    const proof = proveDeposit(TARGET, { txHash: HASH }, paid({ value: '999' }), 11, 2, TOKENS);
    assert.equal(proof.ok && proof.deposit.amount, '999');
  });

  it('when the chain holds the transfer to the address, of minAmount, deep enough, then the deposit is what the chain says (amount, block), not what was reported', () => {
    const proof = proveDeposit(
      TARGET,
      { txHash: HASH.toUpperCase().replace('0X', '0x'), chain: 'evm:31337', amount: '999999999' },
      paid(),
      11,
      2,
      TOKENS,
    );
    assert.deepEqual(proof, {
      ok: true,
      deposit: { txHash: HASH, chain: 'evm:31337', amount: '1000', blockNumber: 10, transferIndex: 0, asset: 'native' },
    });
  });

  it('when the chain says who sent the transfer, then the proof carries the sender (where a refund of it would go), beside the deposit', () => {
    const from = '0x' + 'cd'.repeat(20);
    const proof = proveDeposit(TARGET, { txHash: HASH }, paid({ from }), 11, 2, TOKENS);
    assert.equal(proof.ok && proof.sender, from);
    assert.equal(proof.ok && 'sender' in proof.deposit, false);
  });

  it('when anything does not hold, then the report is refused with its reason, and only "not yet" and "not seen" may be believed later', () => {
    const cases: Array<[string, ReturnType<typeof proveDeposit>]> = [
      ['not-found', proveDeposit(TARGET, { txHash: HASH }, undefined, 11, 2, TOKENS)],
      ['not-found', proveDeposit(TARGET, { txHash: '0xforged' }, paid(), 11, 2, TOKENS)],
      ['unconfirmed', proveDeposit(TARGET, { txHash: HASH }, paid({ blockNumber: null }), 11, 2, TOKENS)],
      ['unconfirmed', proveDeposit(TARGET, { txHash: HASH }, paid(), 10, 2, TOKENS)],
      ['failed', proveDeposit(TARGET, { txHash: HASH }, paid({ succeeded: false }), 11, 2, TOKENS)],
      ['other-address', proveDeposit(TARGET, { txHash: HASH }, paid({ to: '0x' + '00'.repeat(20) }), 11, 2, TOKENS)],
      ['other-address', proveDeposit(TARGET, { txHash: HASH }, paid({ to: null }), 11, 2, TOKENS)],
      ['no-value', proveDeposit(TARGET, { txHash: HASH }, paid({ value: '0' }), 11, 2, TOKENS)],
      ['wrong-chain', proveDeposit(TARGET, { txHash: HASH, chain: 'evm:1' }, paid(), 11, 2, TOKENS)],
      ['not-top-level', proveDeposit(TARGET, { txHash: HASH, transferIndex: 1 }, paid(), 11, 2, TOKENS)],
    ];
    for (const [reason, proof] of cases) {
      assert.equal(proof.ok, false, reason);
      if (proof.ok) continue;
      assert.equal(proof.reason, reason);
      assert.equal(proof.retryable, reason === 'unconfirmed' || reason === 'not-found', reason);
    }
  });

  it('when a token target is paid by the Transfer log at the reported transferIndex, then the deposit is that log: its token, index and amount', () => {
    const token = '0x' + 'cd'.repeat(20);
    const target: DepositTarget = { ...TARGET, asset: `erc20:${token}` };
    const transferLog = (to: string, amount: bigint, address = token) => ({
      address,
      topics: [TRANSFER_TOPIC, addressTopic('0x' + '01'.repeat(20)), addressTopic(to)],
      data: '0x' + amount.toString(16).padStart(64, '0'),
    });
    const tx = paid({ to: token, value: '0', logs: [transferLog('0x' + '02'.repeat(20), 5n), transferLog(TARGET.address, 1500n)] });
    const proof = proveDeposit(target, { txHash: HASH, transferIndex: 1 }, tx, 11, 2, TOKENS);
    assert.deepEqual(proof, {
      ok: true,
      deposit: { txHash: HASH, chain: 'evm:31337', amount: '1500', blockNumber: 10, transferIndex: 1, asset: `erc20:${token}` },
      sender: '0x' + '01'.repeat(20),
    });
    assert.equal(proveDeposit(target, { txHash: HASH, transferIndex: 0 }, tx, 11, 2, TOKENS).ok, false, 'log 0 pays another address');
    const other = proveDeposit(
      target,
      { txHash: HASH, transferIndex: 0 },
      paid({ logs: [transferLog(TARGET.address, 7n, '0x' + 'ee'.repeat(20))] }),
      11,
      2,
      TOKENS,
    );
    assert.equal(
      other.ok ? 'ok' : other.reason,
      'no-token-transfer',
      "another token's log is not the target's asset unless the report says so",
    );
    const reportedOther = proveDeposit(
      target,
      { txHash: HASH, transferIndex: 0, asset: `erc20:${'ee'.repeat(20).replace(/^/, '0x')}` },
      paid({ logs: [transferLog(TARGET.address, 7n, '0x' + 'ee'.repeat(20))] }),
      11,
      2,
      TOKENS,
    );
    assert.ok(
      reportedOther.ok && reportedOther.deposit.asset === `erc20:0x${'ee'.repeat(20)}`,
      'proven: the execution then refuses it as wrong-asset',
    );
  });

  it('when a report names a token the deployment does not allow (a real transfer of a token anyone deployed), then it is refused as token-not-allowed, for good, whatever the transfer moved', () => {
    const worthless = '0x' + '66'.repeat(20);
    const log = {
      address: worthless,
      topics: [TRANSFER_TOPIC, addressTopic('0x' + '01'.repeat(20)), addressTopic(TARGET.address)],
      data: '0x' + 'f'.repeat(64),
    };
    const tx = paid({ to: worthless, value: '0', logs: [log] });
    const cases = [
      proveDeposit(TARGET, { txHash: HASH, transferIndex: 0, asset: `erc20:${worthless}` }, tx, 11, 2, TOKENS),
      // An allowed token of another chain is not allowed on this one.
      proveDeposit(TARGET, { txHash: HASH, asset: `erc20:${worthless}` }, tx, 11, 2, [{ chain: 'evm:1', address: worthless }]),
      // A token target whose token the deployment no longer allows.
      proveDeposit({ ...TARGET, asset: `erc20:${worthless}` }, { txHash: HASH }, tx, 11, 2, TOKENS),
    ];
    for (const proof of cases) assert.deepEqual(proof.ok ? 'ok' : [proof.reason, proof.retryable], ['token-not-allowed', false]);
    const allowed = proveDeposit(TARGET, { txHash: HASH, asset: `erc20:${worthless.toUpperCase().replace('0X', '0x')}` }, tx, 11, 2, [
      ...TOKENS,
      { chain: 'evm:31337', address: worthless },
    ]);
    assert.equal(allowed.ok && allowed.deposit.amount, (2n ** 256n - 1n).toString(), 'once allowed, the same transfer is proven');
  });

  it('when an internal call of the transaction paid the address and the node has traces, then transferIndex names that call', () => {
    const tx = paid({
      to: '0x' + '99'.repeat(20),
      value: '3000',
      internalTransfers: [{ to: TARGET.address.toLowerCase(), value: '3000' }],
    });
    const proof = proveDeposit(TARGET, { txHash: HASH, transferIndex: 1 }, tx, 11, 2, TOKENS);
    assert.ok(proof.ok && proof.deposit.amount === '3000' && proof.deposit.transferIndex === 1);
    const noTraces = proveDeposit(TARGET, { txHash: HASH, transferIndex: 1 }, paid({ to: '0x' + '99'.repeat(20) }), 11, 2, TOKENS);
    assert.equal(noTraces.ok ? 'ok' : noTraces.reason, 'not-top-level');
  });

  it('when the depth varies, then a transfer is believed exactly from DEPOSIT_CONFIRMATIONS deep on', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1000 }),
        fc.integer({ min: 0, max: 50 }),
        fc.integer({ min: 1, max: 64 }),
        (block, above, confirmations) => {
          const proof = proveDeposit(TARGET, { txHash: HASH }, paid({ blockNumber: block }), block + above, confirmations, TOKENS);
          assert.equal(proof.ok, above + 1 >= confirmations);
        },
      ),
    );
  });
});

describe('domain/execution-state: a record keeps a bounded number of refused deposits, the ledger every one', () => {
  const pending = (): ExecutionRecord => {
    return applyDeposit(preparedRecord('e'), { txHash: '0xfirst' }, '2026-01-01T00:00:01.000Z').record;
  };

  it('when any number of other transfers reach an execution that has its deposit, then its record holds at most MAX_REFUSED_IN_RECORD and each later one comes back as overflow, once per transfer', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 60 }), { maxLength: 120 }), (transfers) => {
        let rec = pending();
        const owed = new Map<string, number>();
        for (const n of transfers) {
          const { record, outcome, overflow } = applyDeposit(rec, { txHash: `0xother${n}` }, '2026-01-01T00:00:02.000Z');
          assert.equal(outcome, 'refused-other-tx');
          if (overflow) owed.set(overflow.txHash, (owed.get(overflow.txHash) ?? 0) + 1);
          rec = record;
        }
        const distinct = new Set(transfers.map((n) => `0xother${n}`));
        assert.equal(rec.refusedDeposits.length, Math.min(distinct.size, MAX_REFUSED_IN_RECORD));
        // Every distinct transfer is owed back: in the record, or handed out for the ledger.
        for (const tx of distinct) assert.ok(rec.refusedDeposits.some((r) => r.txHash === tx) || owed.has(tx), tx);
        assert.equal(rec.status, 'OPERATION_PENDING');
      }),
    );
  });

  it('when a record is projected, then its ledger rows are its refused deposits, the overflow, and its own deposit once a cancel made it refundDue', () => {
    const rec = applyDeposit(pending(), { txHash: '0xother', amount: '5' }, '2026-01-01T00:00:02.000Z').record;
    const cancelled: ExecutionRecord = { ...rec, status: 'CANCELLED', deposit: { ...rec.deposit!, refundDue: true } };
    const rows = refundsOfRecord('exec:w:e', cancelled, [{ txHash: '0xlate', at: '2026-01-01T00:00:03.000Z', reason: 'cancelled' }]);
    assert.deepEqual(
      rows.map((r) => [r.txHash, r.reason, r.reportedBy, r.amount]),
      [
        ['0xother', 'other-tx', 'execution', '5'],
        ['0xlate', 'cancelled', 'execution', undefined],
        ['0xfirst', 'cancelled-after-deposit', 'execution', undefined],
      ],
    );
    assert.ok(
      rows.every((r) => r.voidReason === undefined),
      'nothing reorganised away: every row owed',
    );
  });

  it('when a record whose deposit or refused transfer was reorganised away is projected after it closed, then those rows are void from the start (owed to nobody), the others owed', () => {
    const rec = applyDeposit(pending(), { txHash: '0xother', amount: '5' }, '2026-01-01T00:00:02.000Z').record;
    const expired: ExecutionRecord = {
      ...rec,
      status: 'EXPIRED',
      deposit: { ...rec.deposit!, refundDue: true, reorged: true },
      refusedDeposits: [
        ...rec.refusedDeposits,
        { txHash: '0xgone', amount: '7', at: '2026-01-01T00:00:03.000Z', reason: 'other-tx', reorged: true },
      ],
    };
    const rows = refundsOfRecord('exec:w:e', expired, []);
    assert.deepEqual(
      rows.map((r) => [r.txHash, r.reason, r.voidReason]),
      [
        ['0xother', 'other-tx', undefined],
        ['0xgone', 'other-tx', 'reorged'],
        ['0xfirst', 'unsigned-by-deadline', 'reorged'],
      ],
    );
  });
});

describe('domain/transfers: the value internal calls move', () => {
  it('when a call tree moves value, then the calls that succeeded and pay are numbered depth first, a failed frame and its subtree moving nothing', () => {
    const a = '0x' + 'aa'.repeat(20);
    const b = '0x' + 'bb'.repeat(20);
    const transfers = internalValueTransfers({
      type: 'CALL',
      value: '0x5',
      calls: [
        { type: 'CALL', to: a, value: '0x1', calls: [{ type: 'CALL', to: b, value: '0x2' }] },
        { type: 'DELEGATECALL', to: b, value: '0x9' },
        { type: 'CALL', to: b, value: '0x0' },
        { type: 'CALL', to: a, value: '0x3', error: 'execution reverted', calls: [{ type: 'CALL', to: b, value: '0x4' }] },
        { type: 'SELFDESTRUCT', to: b.toUpperCase().replace('0X', '0x'), value: '0x6' },
      ],
    });
    assert.deepEqual(transfers, [
      { to: a, value: '1' },
      { from: a, to: b, value: '2' },
      { to: b, value: '6' },
    ]);
  });

  it("when a contract pays by an internal call, then each transfer's from is its call frame's (the contract that paid), not the transaction's sender", () => {
    const eoa = '0x' + '11'.repeat(20);
    const wallet = '0x' + '22'.repeat(20);
    const module = '0x' + '33'.repeat(20);
    const target = '0x' + '44'.repeat(20);
    const transfers = internalValueTransfers({
      type: 'CALL',
      from: eoa,
      to: wallet,
      value: '0x0',
      calls: [
        { type: 'CALL', from: wallet.toUpperCase().replace('0X', '0x'), to: target, value: '0x7' },
        // A Safe's module runs by DELEGATECALL: value its code sends leaves the wallet.
        { type: 'DELEGATECALL', from: wallet, to: module, calls: [{ type: 'CALL', to: target, value: '0x8' }] },
        { type: 'CALL', to: module, calls: [{ type: 'CALL', to: target, value: '0x9' }] },
      ],
    });
    assert.deepEqual(transfers, [
      { from: wallet, to: target, value: '7' },
      { from: wallet, to: target, value: '8' },
      { from: module, to: target, value: '9' },
    ]);
  });
});

describe('domain/transfers: a token Transfer log', () => {
  const owner = '0x' + 'Aa'.repeat(20);
  const recipient = '0x' + 'bB'.repeat(20);
  const token = '0x' + 'cc'.repeat(20);
  const log = (topics: string[]) => ({ address: token, topics, data: '0x' + 12n.toString(16).padStart(64, '0') });

  it('when a Transfer log is read, then its from (topic 1) is the payer beside its token, recipient and amount, lowercase', () => {
    assert.deepEqual(tokenTransfer(log([TRANSFER_TOPIC, addressTopic(owner), addressTopic(recipient)])), {
      token,
      from: owner.toLowerCase(),
      to: recipient.toLowerCase(),
      amount: '12',
    });
  });

  it('when topic 1 is no 32-byte word, then the log is no standard Transfer', () => {
    assert.equal(tokenTransfer(log([TRANSFER_TOPIC, '0x01', addressTopic(recipient)])), undefined);
  });
});

describe("domain/deposit-proof: a proof's sender is the transfer's payer, read from the transfer itself", () => {
  const relayer = '0x' + 'ee'.repeat(20);
  const owner = '0x' + '0a'.repeat(20);
  const forwarder = '0x' + 'f0'.repeat(20);
  const token = '0x' + 'cd'.repeat(20);

  it("when a relayer's transferFrom pays a token target, then the sender is the Transfer log's from (the owner), not the transaction's sender", () => {
    const target: DepositTarget = { ...TARGET, asset: `erc20:${token}` };
    const tx = paid({
      from: relayer,
      to: token,
      value: '0',
      logs: [
        { address: token, topics: [TRANSFER_TOPIC, addressTopic(owner), addressTopic(TARGET.address)], data: '0x' + '1'.padStart(64, '0') },
      ],
    });
    const proof = proveDeposit(target, { txHash: HASH }, tx, 11, 2, TOKENS);
    assert.equal(proof.ok && proof.sender, owner);
    assert.equal(payerAt(tx, `erc20:${token}`, 0), owner);
    assert.equal(payerAt(tx, `erc20:0x${'ee'.repeat(20)}`, 0), undefined, "another token's transfer has no payer here");
  });

  it("when a contract's internal call pays the target, then the sender is the call frame's from (the contract), not the transaction's sender", () => {
    const tx = paid({
      from: relayer,
      to: forwarder,
      value: '3000',
      internalTransfers: [{ from: forwarder, to: TARGET.address.toLowerCase(), value: '3000' }],
    });
    const proof = proveDeposit(TARGET, { txHash: HASH, transferIndex: 1 }, tx, 11, 2, TOKENS);
    assert.equal(proof.ok && proof.sender, forwarder);
    assert.equal(payerAt(tx, 'native', 1), forwarder);
    assert.equal(payerAt(tx, 'native', 2), undefined, 'no such call');
    assert.equal(payerAt(paid({ from: relayer }), 'native', 1), undefined, 'no traces read: not told');
  });

  it("when the transaction's own value pays the target (transferIndex 0), then the sender is the transaction's sender", () => {
    const tx = paid({ from: relayer.toUpperCase().replace('0X', '0x') });
    const proof = proveDeposit(TARGET, { txHash: HASH }, tx, 11, 2, TOKENS);
    assert.equal(proof.ok && proof.sender, relayer);
    assert.equal(payerAt(tx, 'native', 0), relayer);
  });
});

describe('domain/payer-kind: whether a payer is an EOA or a contract, by its code', () => {
  it('when the address has no code, then it is an EOA', () => {
    for (const code of [undefined, '', '0x']) assert.equal(payerKind(code), 'eoa', String(code));
  });

  it('when the code is an EIP-7702 delegation designator (0xef0100 + 20-byte address), then it is still an EOA', () => {
    assert.equal(payerKind('0xef0100' + 'ab'.repeat(20)), 'eoa');
    assert.equal(payerKind('0xEF0100' + 'AB'.repeat(20)), 'eoa');
  });

  it('when the code is anything else (a contract, or bytes that only start like a designator), then it is a contract', () => {
    assert.equal(payerKind('0x6080604052'), 'contract');
    assert.equal(payerKind('0xef0100' + 'ab'.repeat(19)), 'contract', 'one byte short');
    assert.equal(payerKind('0xef0100' + 'ab'.repeat(21)), 'contract', 'one byte long');
    assert.equal(payerKind('0xef0101' + 'ab'.repeat(20)), 'contract', 'another prefix');
  });
});

describe("domain/deposit-proof: a transfer a deposit address paid is the service's own, never a deposit", () => {
  /** Another of the service's deposit addresses (a refund's payer), and anyone's. */
  const service = '0x' + '5e'.repeat(20);
  const anyone = '0x' + '0b'.repeat(20);
  const token = TOKENS[0].address;
  const servicePayers = new Set([service]);
  const refused = (proof: ReturnType<typeof proveDeposit>) => (proof.ok ? 'ok' : [proof.reason, proof.retryable]);

  it('when its payer is one of the service addresses (its own value, an internal call, a token Transfer), then it is refused as service-transfer, for good, even before it is deep enough', () => {
    const token20 = `erc20:${token}` as const;
    const cases = [
      proveDeposit(TARGET, { txHash: HASH }, paid({ from: service.toUpperCase().replace('0X', '0x') }), 11, 2, TOKENS, servicePayers),
      proveDeposit(TARGET, { txHash: HASH }, paid({ from: service }), 10, 2, TOKENS, servicePayers),
      proveDeposit(
        TARGET,
        { txHash: HASH, transferIndex: 1 },
        paid({ from: anyone, internalTransfers: [{ from: service, to: TARGET.address.toLowerCase(), value: '5000' }] }),
        11,
        2,
        TOKENS,
        servicePayers,
      ),
      proveDeposit(
        { ...TARGET, asset: token20 },
        { txHash: HASH },
        paid({
          from: anyone,
          to: token,
          value: '0',
          logs: [
            {
              address: token,
              topics: [TRANSFER_TOPIC, addressTopic(service), addressTopic(TARGET.address)],
              data: '0x' + '7'.padStart(64, '0'),
            },
          ],
        }),
        11,
        2,
        TOKENS,
        servicePayers,
      ),
    ];
    for (const proof of cases) assert.deepEqual(refused(proof), ['service-transfer', false]);
    assert.match(cases[0].ok ? '' : cases[0].message, /one of the service's deposit addresses or its gas account/);
  });

  it("when its payer is anyone else, or the transfer is refused for another reason first, then the service's addresses change nothing", () => {
    assert.equal(proveDeposit(TARGET, { txHash: HASH }, paid({ from: anyone }), 11, 2, TOKENS, servicePayers).ok, true);
    assert.equal(proveDeposit(TARGET, { txHash: HASH }, paid({ from: service }), 11, 2, TOKENS).ok, true, 'no addresses given');
    assert.deepEqual(
      refused(proveDeposit(TARGET, { txHash: HASH }, paid({ from: service, succeeded: false }), 11, 2, TOKENS, servicePayers)),
      ['failed', false],
    );
    assert.deepEqual(refused(proveDeposit(TARGET, { txHash: HASH }, paid({ from: service, to: anyone }), 11, 2, TOKENS, servicePayers)), [
      'other-address',
      false,
    ]);
  });

  it("when proveOnChain reads a transfer, then it asks which of the transfer's payer is a deposit address of the target's chain, and refuses it when it is", async () => {
    const node = (from: string) =>
      ({
        getBlockNumber: async () => 20n,
        getTransaction: async () => ({ from, to: TARGET.address, value: 5000n, blockNumber: 10n }),
        getTransactionReceipt: async () => ({ blockNumber: 10n, status: 'success', logs: [] }),
      }) as unknown as PublicClient;
    const asked: Array<[string, readonly string[]]> = [];
    const depositAddresses = async (chain: string, addresses: readonly string[]) => {
      asked.push([chain, addresses]);
      return new Set(addresses.filter((a) => a === service));
    };
    const fromService = await proveOnChain(node(service), TARGET, { txHash: HASH }, 2, TOKENS, depositAddresses);
    assert.deepEqual(refused(fromService), ['service-transfer', false]);
    const fromAnyone = await proveOnChain(node(anyone), TARGET, { txHash: HASH }, 2, TOKENS, depositAddresses);
    assert.equal(fromAnyone.ok && fromAnyone.sender, anyone);
    assert.deepEqual(asked, [
      ['evm:31337', [service]],
      ['evm:31337', [anyone]],
    ]);
    assert.equal((await proveOnChain(node(service), TARGET, { txHash: HASH }, 2, TOKENS)).ok, true, 'no look-up given: not asked');
  });
});
