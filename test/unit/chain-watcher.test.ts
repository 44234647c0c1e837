import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  applyRound,
  confirmedCheckpoint,
  initialWatcherState,
  resumeNumbers,
  resumeState,
  nextRoundFrom,
  rewind,
  rewindNumbers,
  transferKey,
  type BlockHeader,
  type BlockRef,
  type ChainTransfer,
  type DepositSignal,
  type ReorgReport,
  type WatcherParams,
  type WatcherState,
} from '../../domain/chain-watcher';

/** A simulated chain: blocks by number (the canonical branch), each with its transfers. */
interface SimBlock extends BlockHeader {
  transfers: ChainTransfer[];
}

class SimChain {
  blocks: SimBlock[] = [];
  private nextId = 0;
  /** Every transaction ever sent, to re-include some after a reorg. */
  readonly txs: string[] = [];

  constructor() {
    this.blocks.push({ number: 0, hash: this.hash(), parentHash: '0x00', transfers: [] });
  }

  private hash(): string {
    return `0xh${this.nextId++}`;
  }

  get head(): number {
    return this.blocks.length - 1;
  }

  /** Mines a block holding `txs` (new transactions, or old ones re-included). */
  mine(txs: string[]): void {
    const parent = this.blocks[this.head];
    const hash = this.hash();
    const number = parent.number + 1;
    const present = new Set(this.blocks.flatMap((b) => b.transfers.map((t) => t.txHash)));
    const transfers = txs
      .filter((tx) => !present.has(tx))
      .map((txHash) => ({
        blockNumber: number,
        blockHash: hash,
        txHash,
        transferIndex: 0,
        to: '0xaddr',
        amount: '1',
        workflowId: `wf-${txHash}`,
      }));
    this.blocks.push({ number, hash, parentHash: parent.hash, transfers });
  }

  newTx(): string {
    const tx = `0xtx${this.txs.length}`;
    this.txs.push(tx);
    return tx;
  }

  /** Drops the last `depth` blocks (never the genesis); the caller mines the new branch. */
  drop(depth: number): void {
    this.blocks = this.blocks.slice(0, Math.max(1, this.blocks.length - depth));
  }

  read(from: number, max: number): { head: number; blocks: BlockHeader[]; transfers: ChainTransfer[] } {
    const slice = this.blocks.slice(from, Math.min(this.head, from + max - 1) + 1);
    return {
      head: this.head,
      blocks: slice.map(({ number, hash, parentHash }) => ({ number, hash, parentHash })),
      transfers: slice.flatMap((b) => b.transfers),
    };
  }

  canonical(numbers: number[]): Map<number, string> {
    return new Map(numbers.filter((n) => n <= this.head).map((n) => [n, this.blocks[n].hash]));
  }
}

/** Drives the watcher the way the workflow does: one round, and a rewind when it asks. */
class Driver {
  state: WatcherState;
  readonly signals: DepositSignal[] = [];
  readonly reorged: ReorgReport[] = [];
  /** Signals and reorg reports by transfer key, in the order they were sent. */
  readonly events: Array<{ kind: 'signal' | 'reorg'; key: string }> = [];
  /** What the read model keeps outside the workflow: the last confirmed block and the transfers signalled. */
  private saved: BlockRef;
  private readonly table = new Map<string, ChainTransfer>();

  constructor(
    private readonly chain: SimChain,
    private readonly params: WatcherParams,
  ) {
    this.state = initialWatcherState(chain.blocks[chain.head]);
    this.saved = this.state.window[0];
  }

  round(max: number): boolean {
    // The round's activity records the last confirmed block the previous round left.
    this.saved = confirmedCheckpoint(this.state, this.params.confirmations) ?? this.saved;
    const read = this.chain.read(nextRoundFrom(this.state), max);
    const out = applyRound(this.state, read.blocks, read.transfers, this.params);
    this.state = out.state;
    this.signals.push(...out.signals);
    this.reported(out.reorged);
    for (const s of out.signals) {
      const key = transferKey({ ...s.deposit, to: s.to });
      this.events.push({ kind: 'signal', key });
      this.table.set(
        key,
        out.state.signalled.find((t) => transferKey(t) === key)!,
      );
    }
    if (out.needsRewind) {
      const r = rewind(this.state, this.chain.canonical(rewindNumbers(this.state)), this.params);
      this.state = r.state;
      this.reorged.push(...r.reorged);
      this.reported(r.reorged);
    }
    return !out.needsRewind && this.state.cursor >= read.head;
  }

  /**
   * The watcher's run ends (failed, terminated) and a new one starts as the workflow does: from the
   * last confirmed block kept in the read model, a window's length back (the activity's watcherStart),
   * its state in memory lost.
   */
  restart(): void {
    const signalled = [...this.table.values()];
    const canonical = this.chain.canonical(resumeNumbers(this.saved, signalled, this.params));
    const resumed = resumeState(this.saved, signalled, canonical, this.params);
    this.state = resumed.state;
    this.reported(resumed.reorged);
  }

  private reported(reports: readonly ReorgReport[]): void {
    for (const report of reports) {
      const key = transferKey(report);
      this.events.push({ kind: 'reorg', key });
      this.table.delete(key);
    }
  }

  /** What the refunds ledger and the executions end up holding as owed: a signal makes a transfer owed, a reorg report unowes it. */
  owed(): Set<string> {
    const owed = new Set<string>();
    for (const e of this.events)
      if (e.kind === 'signal') owed.add(e.key);
      else owed.delete(e.key);
    return owed;
  }

  catchUp(max: number): void {
    for (let i = 0; i < 10_000; i++) if (this.round(max)) return;
    throw new Error('the watcher did not catch up');
  }
}

type Op =
  | { kind: 'mine'; txs: number; reinclude: boolean }
  | { kind: 'reorg'; depth: number; txs: number }
  | { kind: 'round'; max: number }
  | { kind: 'restart' };

const opArb = (maxReorg: number, restarts = false) =>
  fc.oneof(
    { weight: restarts ? 1 : 0, arbitrary: fc.constant({ kind: 'restart' as const }) },
    { weight: 5, arbitrary: fc.record({ kind: fc.constant('mine' as const), txs: fc.nat(3), reinclude: fc.boolean() }) },
    {
      weight: 1,
      arbitrary: fc.record({ kind: fc.constant('reorg' as const), depth: fc.integer({ min: 1, max: maxReorg }), txs: fc.nat(2) }),
    },
    { weight: 4, arbitrary: fc.record({ kind: fc.constant('round' as const), max: fc.integer({ min: 1, max: 6 }) }) },
  );

function run(ops: Op[], params: WatcherParams): { chain: SimChain; driver: Driver } {
  const chain = new SimChain();
  chain.mine([]);
  const driver = new Driver(chain, params);
  for (const op of ops) {
    if (op.kind === 'mine') {
      const txs = Array.from({ length: op.txs }, () => chain.newTx());
      // Re-include a transaction of an orphaned block, as nodes do after a reorg.
      if (op.reinclude && chain.txs.length > 0) txs.push(chain.txs[chain.txs.length - 1]);
      chain.mine(txs);
    } else if (op.kind === 'reorg') {
      const depth = Math.min(op.depth, chain.head);
      chain.drop(depth);
      // The new branch is at least as long: one more block than was dropped.
      for (let i = 0; i <= depth; i++) chain.mine(i === 0 ? Array.from({ length: op.txs }, () => chain.newTx()) : []);
    } else if (op.kind === 'restart') {
      driver.restart();
    } else {
      driver.round(op.max);
    }
  }
  // The chain settles: enough blocks on top for every transfer to be deep enough.
  for (let i = 0; i < params.confirmations; i++) chain.mine([]);
  driver.catchUp(5);
  return { chain, driver };
}

/** The transfers of the final canonical chain at confirmation depth, by key. */
function confirmedOnChain(chain: SimChain, confirmations: number): Set<string> {
  const keys = new Set<string>();
  for (const b of chain.blocks) if (chain.head - b.number + 1 >= confirmations) for (const t of b.transfers) keys.add(transferKey(t));
  return keys;
}

describe('chain watcher state machine (domain/chain-watcher)', () => {
  const params: WatcherParams = { chain: 'evm:31337', confirmations: 3, windowSize: 16 };

  it('when a transfer gets its confirmations, then it is signalled once, with its chain, block and index', () => {
    const chain = new SimChain();
    const driver = new Driver(chain, params);
    const tx = chain.newTx();
    chain.mine([tx]);
    driver.catchUp(10);
    assert.deepEqual(driver.signals, []);
    assert.equal(driver.state.pending.length, 1);
    chain.mine([]);
    driver.catchUp(10);
    assert.deepEqual(driver.signals, []);
    chain.mine([]);
    driver.catchUp(10);
    assert.deepEqual(driver.signals, [
      {
        workflowId: `wf-${tx}`,
        to: '0xaddr',
        blockHash: '0xh1',
        deposit: { txHash: tx, chain: 'evm:31337', amount: '1', blockNumber: 1, transferIndex: 0, asset: 'native' },
      },
    ]);
    chain.mine([]);
    driver.catchUp(10);
    assert.equal(driver.signals.length, 1);
  });

  it("when a transfer's payer is known, then its signal carries it beside the deposit, and the deposit sent to the execution stays as it was", () => {
    const payer = '0x' + '0a'.repeat(20);
    const block = { number: 1, hash: '0xh1', parentHash: '0xh0' };
    const transfer: ChainTransfer = {
      blockNumber: 1,
      blockHash: '0xh1',
      txHash: '0xt1',
      transferIndex: 2,
      asset: 'native',
      to: '0xaddr',
      amount: '5',
      from: payer,
      workflowId: 'wf-1',
    };
    const { signals } = applyRound(initialWatcherState({ number: 0, hash: '0xh0' }), [block], [transfer], { ...params, confirmations: 1 });
    assert.deepEqual(signals, [
      {
        workflowId: 'wf-1',
        to: '0xaddr',
        blockHash: '0xh1',
        from: payer,
        deposit: { txHash: '0xt1', chain: 'evm:31337', amount: '5', blockNumber: 1, transferIndex: 2, asset: 'native' },
      },
    ]);
  });

  it('when the block of a pending transfer is reorganised away, then it is never signalled', () => {
    const chain = new SimChain();
    const driver = new Driver(chain, params);
    chain.mine([chain.newTx()]);
    driver.catchUp(10);
    assert.equal(driver.state.pending.length, 1);
    chain.drop(1);
    chain.mine([]);
    chain.mine([]);
    for (let i = 0; i < 5; i++) chain.mine([]);
    driver.catchUp(10);
    assert.deepEqual(driver.signals, []);
    assert.deepEqual(driver.reorged, []);
  });

  it('when a reorg keeps the height (same number, new hash), then the re-read tail shows it', () => {
    const chain = new SimChain();
    const driver = new Driver(chain, { ...params, confirmations: 1 });
    chain.mine([]);
    driver.catchUp(10);
    chain.drop(1);
    chain.mine([chain.newTx()]);
    driver.catchUp(10);
    assert.equal(driver.signals.length, 1);
    assert.equal(driver.state.window.at(-1)?.hash, chain.blocks[chain.head].hash);
  });

  it('when a signalled deposit is reorganised away deeper than the confirmations, then it is reported once, and signalled again once the same transaction is mined again and confirmed', () => {
    const chain = new SimChain();
    const driver = new Driver(chain, params);
    const tx = chain.newTx();
    chain.mine([tx]);
    chain.mine([]);
    chain.mine([]);
    driver.catchUp(10);
    assert.equal(driver.signals.length, 1);
    chain.drop(3);
    chain.mine([]);
    chain.mine([]);
    chain.mine([]);
    chain.mine([]);
    driver.catchUp(10);
    assert.equal(driver.reorged.length, 1);
    assert.deepEqual(
      { txHash: driver.reorged[0].txHash, blockNumber: driver.reorged[0].blockNumber, workflowId: driver.reorged[0].workflowId },
      { txHash: tx, blockNumber: 1, workflowId: `wf-${tx}` },
    );
    assert.equal(driver.signals.length, 1);
    chain.mine([tx]); // the transaction is mined again on the new branch
    chain.mine([]);
    driver.catchUp(10);
    assert.equal(driver.signals.length, 1, 'signalled again before its confirmations');
    chain.mine([]);
    driver.catchUp(10);
    assert.equal(driver.signals.length, 2);
    assert.equal(driver.signals[1].deposit.blockNumber, 5);
    assert.equal(driver.reorged.length, 1);
    assert.deepEqual(driver.owed(), new Set([transferKey({ txHash: tx, transferIndex: 0, to: '0xaddr' })]));
  });

  it('when the watcher restarts from its checkpoint after blocks were mined meanwhile, then no transfer is missed', () => {
    const chain = new SimChain();
    const driver = new Driver(chain, params);
    for (let i = 0; i < 30; i++) chain.mine([chain.newTx()]);
    driver.catchUp(7);
    driver.restart();
    assert.ok(driver.state.cursor <= 30 - params.confirmations + 1);
    for (let i = 0; i < 40; i++) chain.mine([chain.newTx()]);
    driver.catchUp(7);
    assert.deepEqual(driver.owed(), confirmedOnChain(chain, params.confirmations));
  });

  it('when the state is kept bounded, then the window never exceeds its size', () => {
    const chain = new SimChain();
    const driver = new Driver(chain, params);
    for (let i = 0; i < 100; i++) chain.mine([chain.newTx()]);
    driver.catchUp(7);
    assert.equal(driver.state.window.length, params.windowSize);
    assert.ok(driver.state.signalled.every((t) => t.blockNumber >= driver.state.window[0].number));
  });

  it('property: with reorgs shallower than the confirmations, exactly the transfers of the final chain at confirmation depth are signalled, each once, and nothing is reported', () => {
    fc.assert(
      fc.property(fc.array(opArb(params.confirmations - 1), { maxLength: 80 }), (ops) => {
        const { chain, driver } = run(ops, params);
        const keys = driver.signals.map((s) => transferKey({ ...s.deposit, to: s.to }));
        assert.equal(new Set(keys).size, keys.length, 'a transfer was signalled twice');
        assert.deepEqual(new Set(keys), confirmedOnChain(chain, params.confirmations));
        assert.deepEqual(driver.reorged, []);
      }),
      { numRuns: 300 },
    );
  });

  it('property: with reorgs of any depth within the window, re-inclusions and restarts, every transfer that ends canonical and confirmed is owed exactly once, none that ends off the chain is, and no transfer is signalled twice without a reorg between', () => {
    fc.assert(
      fc.property(fc.array(opArb(params.windowSize - 2, true), { maxLength: 80 }), (ops) => {
        const { chain, driver } = run(ops, params);
        assert.deepEqual(driver.owed(), confirmedOnChain(chain, params.confirmations));
        // A reorg report follows a signal of the same transfer, and a second signal follows a reorg,
        // except that a restarted run signals again what it re-reads (the execution and the ledger take it once).
        const last = new Map<string, 'signal' | 'reorg'>();
        for (const e of driver.events) {
          if (e.kind === 'reorg') assert.equal(last.get(e.key), 'signal', `${e.key} was reported without having been signalled`);
          last.set(e.key, e.kind);
        }
      }),
      {
        numRuns: 300,
        examples: [
          [
            [
              { kind: 'mine', txs: 0, reinclude: false },
              { kind: 'reorg', depth: 2, txs: 1 },
              { kind: 'round', max: 1 },
              { kind: 'round', max: 3 },
              { kind: 'restart' },
              { kind: 'reorg', depth: 3, txs: 0 },
            ],
          ],
        ],
      },
    );
  });

  it('property: without restarts, a transfer is signalled again only after a reorg report of it', () => {
    fc.assert(
      fc.property(fc.array(opArb(params.windowSize - 2), { maxLength: 80 }), (ops) => {
        const { driver } = run(ops, params);
        const last = new Map<string, 'signal' | 'reorg'>();
        for (const e of driver.events) {
          assert.notEqual(last.get(e.key), e.kind, `${e.key}: two ${e.kind}s in a row`);
          last.set(e.key, e.kind);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('when confirmedCheckpoint is asked, then it answers the deepest window block with every transfer at or below it signalled', () => {
    const chain = new SimChain();
    const driver = new Driver(chain, params);
    assert.equal(confirmedCheckpoint(driver.state, params.confirmations), undefined);
    for (let i = 0; i < 10; i++) chain.mine([chain.newTx()]);
    driver.catchUp(10);
    const checkpoint = confirmedCheckpoint(driver.state, params.confirmations)!;
    assert.equal(checkpoint.number, 10 - params.confirmations + 1);
    assert.ok(driver.state.pending.every((t) => t.blockNumber > checkpoint.number));
  });
});
