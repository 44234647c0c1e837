import assert from 'node:assert/strict';
import {
  applyRound,
  confirmedCheckpoint,
  initialWatcherState,
  MAX_HELD_TRANSFERS,
  rewind,
  roundRoom,
  type BlockHeader,
  type ChainTransfer,
  type WatcherParams,
  type WatcherState,
} from '../../domain/chain-watcher';

const params: WatcherParams = { chain: 'evm:31337', confirmations: 3, windowSize: 8 };
const header = (n: number): BlockHeader => ({ number: n, hash: `0xh${n}`, parentHash: `0xh${n - 1}` });
const ref = (n: number) => ({ number: n, hash: `0xh${n}` });
const internal = (n: number): ChainTransfer => ({
  blockNumber: n,
  blockHash: `0xh${n}`,
  txHash: `0xt${n}`,
  transferIndex: 1,
  asset: 'native',
  to: '0xaddr',
  amount: '5',
  workflowId: 'exec:w:late',
});
const blocks = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => header(from + i));

describe('chain watcher backlog of untraced blocks (domain/chain-watcher)', () => {
  const start = (): WatcherState => initialWatcherState(ref(0));

  it('when a block is read without its traces, then it joins the backlog, the checkpoint stays below it, and its internal transfer found later is signalled once', () => {
    let state = applyRound(start(), blocks(1, 5), [], params, { untraced: [ref(2)] }).state;
    assert.deepEqual(state.untraced, [ref(2)]);
    assert.equal(confirmedCheckpoint(state, params.confirmations)?.number, 1);

    const late = applyRound(state, [header(5), header(6)], [internal(2)], params, { traced: [ref(2)] });
    state = late.state;
    assert.equal(state.untraced, undefined);
    assert.deepEqual(
      late.signals.map((s) => [s.deposit.txHash, s.deposit.transferIndex]),
      [['0xt2', 1]],
    );
    assert.equal(confirmedCheckpoint(state, params.confirmations)?.number, 4);
    const again = applyRound(state, [header(6)], [internal(2)], params, { traced: [ref(2)] });
    assert.deepEqual(again.signals, []);
  });

  it('when a backlog block leaves the window untraced, then it is abandoned once and the backlog never outgrows the window', () => {
    let state = applyRound(start(), blocks(1, 3), [], params, { untraced: [ref(1), ref(2), ref(3)] }).state;
    const outcome = applyRound(state, blocks(3, 10), [], params, { untraced: blocks(4, 10).map((h) => ref(h.number)) });
    state = outcome.state;
    assert.deepEqual(
      outcome.abandoned.map((b) => b.number),
      [1, 2],
    );
    assert.ok(state.untraced!.length <= params.windowSize);
    assert.ok(state.untraced!.every((b) => b.number >= state.window[0].number));
    assert.deepEqual(applyRound(state, [header(10)], [], params).abandoned, []);
  });

  it('when a reorganisation rewinds below a backlog block, then the block leaves the backlog: it is read again, with its traces', () => {
    const state = applyRound(start(), blocks(1, 5), [], params, { untraced: [ref(2), ref(4)] }).state;
    const canonical = new Map([0, 1, 2, 3].map((n) => [n, `0xh${n}`]));
    assert.deepEqual(rewind(state, canonical, params).state.untraced, [ref(2)]);
  });

  it('when a traced transfer names a block the window does not hold (another hash), then it is dropped', () => {
    const state = applyRound(start(), blocks(1, 5), [], params, { untraced: [ref(2)] }).state;
    const outcome = applyRound(state, [header(5)], [{ ...internal(2), blockHash: '0xother' }], params, { traced: [ref(2)] });
    assert.deepEqual(outcome.state.pending, []);
    assert.deepEqual(outcome.signals, []);
  });

  it('when the state holds transfers, then the next round has room for what is left of MAX_HELD_TRANSFERS, never less than none', () => {
    const many = (count: number) => Array.from({ length: count }, (_, i) => ({ ...internal(1), txHash: `0xt${i}` }));
    assert.equal(roundRoom(start()), MAX_HELD_TRANSFERS);
    assert.equal(roundRoom({ ...start(), pending: many(10), signalled: many(90) }), MAX_HELD_TRANSFERS - 100);
    assert.equal(roundRoom({ ...start(), signalled: many(MAX_HELD_TRANSFERS + 5) }), 0);
  });
});
