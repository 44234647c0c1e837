import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createStorageNodeServer } from '../../storage-node/server';
import { LOG_FILE, SNAPSHOT_FILE, WhitelistStore, type WhitelistStoreOptions } from '../../storage-node/whitelist-store';
import { add, remove, tempDataDir } from './node-process';

describe('storage node store on disk (in-process)', () => {
  let dir: string;
  const open = (options: Partial<WhitelistStoreOptions> = {}) =>
    WhitelistStore.open({ dataDir: dir, onError: (err) => assert.fail(err), ...options });

  beforeEach(() => {
    dir = tempDataDir();
  });
  afterEach(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('when the data directory does not exist, then it is created', () => {
    dir = path.join(dir, 'nested', 'node1');
    open().close();
    assert.ok(fs.existsSync(path.join(dir, LOG_FILE)));
  });

  it('when a compaction crashed after the snapshot but before emptying the log, then nothing is applied twice', () => {
    let store = open();
    store.apply({ batchId: 'b1', changes: [add('user', 'a')] });
    store.apply({ batchId: 'b2', changes: [remove('user', 'a')] });
    store.close();
    const fullLog = fs.readFileSync(path.join(dir, LOG_FILE));

    // Opening with a tiny threshold compacts at once: snapshot written, log emptied.
    open({ compactAfterBatches: 1 }).close();
    assert.equal(fs.statSync(path.join(dir, LOG_FILE)).size, 0);
    // Put the old records back, as if the crash came before the log was emptied.
    fs.writeFileSync(path.join(dir, LOG_FILE), fullLog);

    store = open();
    assert.equal(store.recovery.replayedBatches, 0);
    assert.deepEqual(store.list('user'), []);
    assert.equal(store.apply({ batchId: 'b1', changes: [add('user', 'a')] }).type, 'repeat');
    assert.equal(fs.statSync(path.join(dir, LOG_FILE)).size, 0, 'the stale records were compacted away');
    store.close();
  });

  it('when a snapshot temp file is left over, then it is ignored and removed', () => {
    const store = open();
    store.apply({ batchId: 'b1', changes: [add('user', 'a')] });
    store.close();
    fs.writeFileSync(path.join(dir, `${SNAPSHOT_FILE}.tmp`), '{"half":');
    const reopened = open();
    assert.deepEqual(reopened.list('user'), ['a']);
    assert.equal(fs.existsSync(path.join(dir, `${SNAPSHOT_FILE}.tmp`)), false);
    reopened.close();
  });

  it('when the snapshot is corrupt, then opening fails instead of starting empty', () => {
    fs.writeFileSync(path.join(dir, SNAPSHOT_FILE), '{"version":1,"lastSeq":');
    assert.throws(() => open(), /corrupt snapshot/);
  });

  it('when more batches pass than are remembered, then compaction keeps only the newest batchIds', () => {
    let store = open({ compactAfterBatches: 2, maxRememberedBatches: 2 });
    for (const id of ['b1', 'b2', 'b3', 'b4']) store.apply({ batchId: id, changes: [add('user', id)] });
    store.close();
    const snapshot = JSON.parse(fs.readFileSync(path.join(dir, SNAPSHOT_FILE), 'utf8'));
    assert.deepEqual(
      snapshot.batches.map((batch: { batchId: string }) => batch.batchId),
      ['b3', 'b4'],
    );

    store = open({ maxRememberedBatches: 2 });
    assert.deepEqual(store.list('user'), ['b1', 'b2', 'b3', 'b4']);
    assert.equal(store.apply({ batchId: 'b4', changes: [add('user', 'b4')] }).type, 'repeat');
    assert.equal(store.apply({ batchId: 'b1', changes: [add('user', 'b1')] }).type, 'applied');
    store.close();
  });

  it('when the store is closed, then a late apply throws instead of writing', () => {
    const store = open();
    store.close();
    assert.throws(() => store.apply({ batchId: 'late', changes: [add('user', 'a')] }), /closed/);
  });

  it('when the server runs in-process, then it binds, reports its address and closes', async () => {
    const node = createStorageNodeServer({ dataDir: dir, onError: (err) => assert.fail(err) });
    assert.equal(node.address(), undefined);
    const bound = await node.listen(0);
    assert.equal(bound.host, '127.0.0.1');
    assert.deepEqual(node.address(), bound);
    const answer = await fetch(`${bound.url}/v1/whitelists/apply`, {
      method: 'POST',
      body: JSON.stringify({ batchId: 'b1', changes: [add('developer', 'a')] }),
    });
    assert.equal(answer.status, 200);
    await node.close();
    await assert.rejects(fetch(`${bound.url}/healthz`));
  });

  it('when an in-process node is closed during a delayed answer, then close does not wait for the delay', async () => {
    const node = createStorageNodeServer({ dataDir: dir, faults: { delayMs: 60_000 }, onError: () => undefined });
    const { url } = await node.listen(0);
    const pending = fetch(`${url}/v1/whitelists/apply`, {
      method: 'POST',
      body: JSON.stringify({ batchId: 'b1', changes: [add('developer', 'a')] }),
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const started = Date.now();
    await node.close();
    assert.ok(Date.now() - started < 1_000);
    await assert.rejects(pending);
  });
});
