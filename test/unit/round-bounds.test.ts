import assert from 'node:assert/strict';
import type { ChainTransfer } from '../../domain/chain-watcher';
import { addWholeBlocks, emptyRoundPart, jsonBytes } from '../../domain/round-bounds';

const header = (n: number) => ({ number: n, hash: `0xh${n}`, parentHash: `0xh${n - 1}` });
const transfers = (n: number, count: number): ChainTransfer[] =>
  Array.from({ length: count }, (_, i) => ({
    blockNumber: n,
    blockHash: `0xh${n}`,
    txHash: `0xt${n}-${i}`,
    transferIndex: 0,
    to: '0xaddr',
    amount: '1000',
    workflowId: 'exec:w:a',
  }));

describe('domain/round-bounds: a round answers whole blocks within its bounds', () => {
  it('when the next block would pass the entries bound, then the answer ends before it', () => {
    const into = emptyRoundPart();
    const part = { headers: [header(1), header(2)], transfers: [...transfers(1, 3), ...transfers(2, 3)], serviceTransfers: [] };
    assert.equal(addWholeBlocks(into, part, { transfers: 5, bytes: Infinity }), false);
    assert.deepEqual(
      into.headers.map((h) => h.number),
      [1],
    );
    assert.equal(into.transfers.length, 3);
  });

  it('when the next block would pass the bytes bound, then the answer ends before it, and counts the bytes it holds', () => {
    const into = emptyRoundPart();
    const one = transfers(1, 2);
    const part = { headers: [header(1), header(2)], transfers: [...one, ...transfers(2, 2)], serviceTransfers: [] };
    assert.equal(addWholeBlocks(into, part, { transfers: Infinity, bytes: jsonBytes(one) + 10 }), false);
    assert.equal(into.headers.length, 1);
    assert.equal(into.bytes, jsonBytes(one) + jsonBytes([]));
  });

  it('when the first block alone passes the bounds, then it is answered all the same: a round that took nothing would never move', () => {
    const into = emptyRoundPart();
    assert.equal(
      addWholeBlocks(into, { headers: [header(1)], transfers: transfers(1, 3), serviceTransfers: [] }, { transfers: 1, bytes: 1 }),
      true,
    );
    assert.equal(into.transfers.length, 3);
  });
});
