import assert from 'node:assert/strict';
import fc from 'fast-check';
import { DEPOSITS_PER_ADDRESS_BLOCK, dustBatches, type AddressOwner, type FoundTransfer } from '../../domain/dust-batches';

const A = '0x' + 'aa'.repeat(20);
const B = '0x' + 'bb'.repeat(20);
const TOKEN = `erc20:0x${'cd'.repeat(20)}` as const;
const owners = new Map<string, AddressOwner>([
  [A, { workflowId: 'exec:w:a', minAmount: '1000', asset: 'native' }],
  [B, { workflowId: 'exec:w:b', minAmount: '50', asset: TOKEN }],
]);
let n = 0;
const found = (to: string, amount: string, block = 1, asset: FoundTransfer['asset'] = 'native'): FoundTransfer => ({
  blockNumber: block,
  blockHash: `0xb${block}`,
  txHash: `0xt${n++}`,
  transferIndex: 0,
  asset,
  to,
  amount,
});

describe('domain/dust-batches: a round joins its transfers with their addresses and sums what an address can never take', () => {
  it('when transfers pay an address its asset and at least its minAmount, then each stays one entry with its execution', () => {
    const out = dustBatches([found(A, '1000'), found(A, '5000'), found(B, '50', 1, TOKEN)], owners);
    assert.deepEqual(
      out.map((t) => [t.workflowId, t.amount, t.transfers]),
      [
        ['exec:w:a', '1000', undefined],
        ['exec:w:a', '5000', undefined],
        ['exec:w:b', '50', undefined],
      ],
    );
  });

  it('when one block brings an address 8,000 transfers that could each complete its deposit, then the first few stay one entry each, in order, and the rest are one surplus batch with their sum and count: the round stays small', () => {
    const flood = Array.from({ length: 8_000 }, () => found(A, '1000', 7));
    const out = dustBatches(flood, owners);
    assert.equal(out.length, DEPOSITS_PER_ADDRESS_BLOCK + 1);
    assert.deepEqual(
      out.slice(0, DEPOSITS_PER_ADDRESS_BLOCK).map((t) => t.txHash),
      flood.slice(0, DEPOSITS_PER_ADDRESS_BLOCK).map((t) => t.txHash),
    );
    const batch = out[DEPOSITS_PER_ADDRESS_BLOCK];
    assert.deepEqual(
      [batch.txHash, batch.transferIndex, batch.transfers, batch.amount, batch.surplus],
      ['0xb7', 1, 8_000 - DEPOSITS_PER_ADDRESS_BLOCK, String(1000 * (8_000 - DEPOSITS_PER_ADDRESS_BLOCK)), true],
    );
  });

  it('when a transfer moves nothing or pays no deposit address, then it is left out', () => {
    assert.deepEqual(dustBatches([found(A, '0'), found('0x' + '11'.repeat(20), '5000'), found(B, '0', 1, TOKEN)], owners), []);
  });

  it('when one block brings an address one transfer it cannot take, then it stays one entry; two or more are one batch per block and asset, named by the block, with their sum and count', () => {
    const single = dustBatches([found(A, '1', 1)], owners);
    assert.deepEqual(
      single.map((t) => [t.amount, t.transfers]),
      [['1', undefined]],
    );
    const out = dustBatches(
      [
        found(A, '1', 1),
        found(A, '1000', 1),
        found(A, '2', 1),
        found(A, '3', 2),
        found(A, '4', 2),
        found(A, '7', 1, TOKEN),
        found(A, '8', 1, TOKEN),
      ],
      owners,
    );
    assert.deepEqual(
      out.map((t) => [t.txHash, t.transferIndex, t.amount, t.transfers, t.asset]),
      [
        ['0xb1', 0, '3', 2, 'native'],
        [out[1].txHash, 0, '1000', undefined, 'native'],
        ['0xb2', 0, '7', 2, 'native'],
        ['0xb1', 0, '15', 2, TOKEN],
      ],
    );
  });

  it('property: nothing is lost or counted twice: per address, the amounts and the transfers counted out equal the nonzero ones in', () => {
    const arb = fc.array(
      fc.record({
        to: fc.constantFrom(A, B),
        amount: fc.bigInt({ min: 0n, max: 3000n }),
        block: fc.integer({ min: 1, max: 3 }),
        token: fc.boolean(),
      }),
      { maxLength: 60 },
    );
    fc.assert(
      fc.property(arb, (plan) => {
        const input = plan.map((p) => found(p.to, String(p.amount), p.block, p.token ? TOKEN : 'native'));
        const out = dustBatches(input, owners);
        for (const address of [A, B]) {
          const mine = input.filter((t) => t.to === address && t.amount !== '0');
          const sum = (ts: ReadonlyArray<{ amount: string }>) => ts.reduce((s, t) => s + BigInt(t.amount), 0n);
          const outMine = out.filter((t) => t.to === address);
          assert.equal(sum(outMine), sum(mine));
          assert.equal(
            outMine.reduce((c, t) => c + (t.transfers ?? 1), 0),
            mine.length,
          );
          // At most one batch per block and asset.
          const batches = outMine.filter((t) => t.transfers !== undefined).map((t) => `${t.blockNumber}:${t.asset}`);
          assert.equal(new Set(batches).size, batches.length);
        }
      }),
      { numRuns: 300 },
    );
  });
});
