import assert from 'node:assert/strict';
import type { ChainWatcherView } from '../../contracts/temporal';
import { ChainProgress, WATCHER_VIEW_MAX_AGE_MS, type ChainFacts } from '../../api/temporal/chain-progress';

describe('unit: the API asks the chain watcher at most once a second, whatever the rate of reads', () => {
  const CHAIN = 'evm:31337';
  const view = (cursor: number): ChainWatcherView => ({ chain: CHAIN, cursor, pending: [], signalledInWindow: 0, signalledTotal: 0 });
  const facts = (served: () => Promise<string>): ChainFacts => ({
    confirmations: () => 2,
    transactionBlock: async () => undefined,
    checkpoint: async () => undefined,
    signalled: async () => false,
    chain: served,
  });

  /** A watcher that answers its cursor (`answer`) after a tick, counting the questions. */
  const watcher = (answer: () => ChainWatcherView | undefined) => {
    const asked: string[] = [];
    const query = async (chain: string) => {
      asked.push(chain);
      await new Promise((r) => setImmediate(r));
      return answer();
    };
    return { asked, query };
  };

  it('when 200 reads arrive at once and more within the second, then the watcher is asked once; after the second, once more', async () => {
    let now = 1_000_000;
    let cursor = 10;
    const w = watcher(() => view(cursor));
    const progress = new ChainProgress(
      w.query,
      facts(async () => CHAIN),
      () => now,
    );
    const first = await Promise.all(Array.from({ length: 200 }, () => progress.view(CHAIN)));
    assert.deepEqual(new Set(first.map((v) => v?.cursor)), new Set([10]));
    cursor = 11;
    now += WATCHER_VIEW_MAX_AGE_MS - 1;
    assert.equal((await progress.view(CHAIN))?.cursor, 10, 'still within the second: the answer kept');
    assert.equal(w.asked.length, 1);
    now += 1;
    assert.equal((await progress.view(CHAIN))?.cursor, 11);
    assert.equal(w.asked.length, 2);
  });

  it('when the watcher does not answer, then its silence is kept as long: a flood does not queue a query per read', async () => {
    let now = 0;
    const w = watcher(() => undefined);
    const progress = new ChainProgress(
      w.query,
      facts(async () => CHAIN),
      () => now,
    );
    const answers = await Promise.all(Array.from({ length: 50 }, () => progress.view(CHAIN)));
    assert.ok(answers.every((a) => a === undefined));
    assert.equal(w.asked.length, 1);
    now += WATCHER_VIEW_MAX_AGE_MS;
    await progress.view(CHAIN);
    assert.equal(w.asked.length, 2);
  });

  it('when a read names a chain the node does not serve, then no watcher is asked; while the node has not told its chain, each read asks', async () => {
    const w = watcher(() => view(1));
    const served = new ChainProgress(
      w.query,
      facts(async () => CHAIN),
    );
    for (let i = 0; i < 20; i++) assert.equal(await served.view(`evm:${1000 + i}`), undefined);
    assert.equal(w.asked.length, 0);
    const nodeDown = new ChainProgress(
      w.query,
      facts(() => Promise.reject(new Error('node down'))),
    );
    await nodeDown.view(CHAIN);
    await nodeDown.view(CHAIN);
    assert.deepEqual(w.asked, [CHAIN, CHAIN]);
  });

  it('when the API has no chain, then nothing is asked', async () => {
    const w = watcher(() => view(1));
    assert.equal(await new ChainProgress(w.query).view(CHAIN), undefined);
    assert.equal(w.asked.length, 0);
  });
});
