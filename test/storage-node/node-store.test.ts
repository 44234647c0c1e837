import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { toChecksumAddress } from '../../domain/eoa';
import SqliteDatabase from 'better-sqlite3';
import { startCheckpointThread, type CheckpointThread } from '../../storage-node/checkpoint-thread';
import { DEFAULT_KEPT_CHANGES } from '../../domain/entry-order';
import { DELIVERY_LOG_FILE } from '../../storage-node/node-files';
import { NodeStore } from '../../storage-node/node-store';
import type { WhitelistChange } from '../../contracts/storage-node-protocol';
import { tempDataDir } from './node-process';

const eoa = (n: number) => toChecksumAddress(`0x${n.toString(16).padStart(40, '0')}`);
const add = (kind: WhitelistChange['kind'], entry: string): WhitelistChange => ({ op_type: 'add_entry', kind, entry });
const remove = (kind: WhitelistChange['kind'], entry: string): WhitelistChange => ({ op_type: 'remove_entry', kind, entry });
const X = eoa(0xa1);
const Y = eoa(0xb2);

describe('storage node store (in-process, SQLite)', () => {
  let dir: string;
  let store: NodeStore;
  beforeEach(() => {
    dir = path.join(tempDataDir(), 'not-yet');
    store = NodeStore.open({ dataDir: dir });
  });
  afterEach(() => {
    store.close();
    fs.rmSync(path.dirname(dir), { recursive: true, force: true });
  });

  it('when the data directory does not exist, then it is created', () => {
    assert.ok(fs.existsSync(dir));
  });

  it('when a batch adds and removes one entry, then each result says whether it changed the set, in order', () => {
    const answer = store.apply({ batchId: 'b1', position: 1, changes: [add('user', X), remove('user', X), add('user', Y)] });
    assert.deepEqual(
      answer.results.map((r) => [r.changed, r.superseded]),
      [
        [true, false],
        [true, false],
        [true, false],
      ],
    );
    assert.deepEqual(store.listPage('user', undefined, 10).entries, [Y]);
  });

  it('when one delivery changes the same entry twice, then the second sees the first (one statement per delivery writes both)', () => {
    const answer = store.apply({ batchId: 'b1', position: 1, changes: [add('developer', X), remove('developer', X), add('user', X)] });
    assert.deepEqual(
      answer.results.map((r) => r.changed),
      [true, true, true],
    );
    assert.equal(store.has('developer', X), false);
    assert.equal(store.has('user', X), true);
    assert.equal(store.auditPage({ limit: 10 }).records.length, 3);
  });

  it('when deliveries were written to the WAL, then a checkpoint copies them into the database file and empties the WAL; a reopened store has them', () => {
    for (let i = 0; i < 50; i++) store.apply({ batchId: `b${i}`, position: i + 1, changes: [add('developer', eoa(0x1000 + i))] });
    store.materialize();
    const wal = path.join(dir, 'whitelists.db-wal');
    assert.ok(fs.statSync(wal).size > 0, 'deliveries are written to the WAL first');
    store.checkpoint();
    assert.equal(fs.statSync(wal).size, 0);
    store.close();
    store = NodeStore.open({ dataDir: dir });
    assert.equal(store.listPage('developer', undefined, 100).entries.length, 50);
  });

  it('when the process dies after a delivery was acknowledged but before its rows were written out, then the next open writes them from the delivery log', () => {
    store.apply({ batchId: 'b1', position: 1, tokenId: 't1', changes: [add('developer', X), add('user', Y)] });
    // The files as a process killed right after its answer leaves them: the log holds the delivery,
    // the data file does not yet (its rows are written out after the answer).
    const crashed = path.join(path.dirname(dir), 'crashed');
    fs.mkdirSync(crashed);
    for (const file of fs.readdirSync(dir)) fs.copyFileSync(path.join(dir, file), path.join(crashed, file));
    const reopened = NodeStore.open({ dataDir: crashed });
    try {
      assert.equal(reopened.has('developer', X), true);
      assert.equal(reopened.has('user', Y), true);
      assert.deepEqual(
        reopened.auditPage({ limit: 10 }).records.map((r) => [r.batchId, r.entry, r.tokenId]),
        [
          ['b1', Y, 't1'],
          ['b1', X, 't1'],
        ],
      );
      // A newer delivery takes the next sequence number, after the replayed one.
      reopened.apply({ batchId: 'b2', position: 2, changes: [remove('developer', X)] });
      assert.equal(reopened.auditPage({ limit: 1 }).records[0].seq, 2);
    } finally {
      reopened.close();
    }
  });

  it('when the newest delivery was a repeat (no audit row) and the log forgot it, then after a reopen the next delivery still gets a new number, and a crash keeps it', () => {
    store.apply({ batchId: 'b1', position: 1, changes: [add('developer', X)] });
    store.apply({ batchId: 'b1', position: 1, changes: [add('developer', X)] });
    store.checkpoint();
    store.close();
    store = NodeStore.open({ dataDir: dir });
    store.apply({ batchId: 'b2', position: 2, changes: [remove('developer', X)] });
    const crashed = path.join(path.dirname(dir), 'crashed');
    fs.mkdirSync(crashed);
    for (const file of fs.readdirSync(dir)) fs.copyFileSync(path.join(dir, file), path.join(crashed, file));
    const reopened = NodeStore.open({ dataDir: crashed });
    try {
      assert.equal(reopened.has('developer', X), false, 'the acknowledged remove survived the crash');
      assert.deepEqual(
        reopened.auditPage({ limit: 10 }).records.map((r) => [r.seq, r.batchId]),
        [
          [3, 'b2'],
          [1, 'b1'],
        ],
      );
    } finally {
      reopened.close();
    }
  });

  it('when a batch comes again, then it answers as the first time and applies nothing again', () => {
    const first = store.apply({ batchId: 'b1', position: 1, changes: [add('developer', X)] });
    store.apply({ batchId: 'b2', position: 2, changes: [remove('developer', X)] });
    const again = store.apply({ batchId: 'b1', position: 1, changes: [add('developer', X)] });
    assert.deepEqual(again, first);
    assert.equal(store.has('developer', X), false, 'the newer remove still decides');
  });

  it('when an older batch arrives after a newer one, then it is acknowledged as superseded and the newer one stays', () => {
    store.apply({ batchId: 'new', position: 20, changes: [remove('developer', X)] });
    const late = store.apply({ batchId: 'old', position: 10, changes: [add('developer', X)] });
    assert.deepEqual(late.results[0], { ...add('developer', X), changed: false, superseded: true });
    assert.equal(store.has('developer', X), false);
  });

  it('when a failed batch is reverted, then its change is undone only where nothing newer decided the entry', () => {
    store.apply({ batchId: 'a', position: 1, changes: [add('user', X), add('user', Y)] });
    store.apply({ batchId: 'c', position: 3, changes: [add('user', Y)] });
    const revert = store.apply({ batchId: 'a', position: 1, revert: true, changes: [add('user', X), add('user', Y)] });
    assert.deepEqual(
      revert.results.map((r) => r.changed),
      [true, false],
    );
    assert.deepEqual(store.listPage('user', undefined, 10).entries, [Y]);
  });

  it('when the store is closed and opened again, then the sets, the order of each entry and the audit trail are as they were', () => {
    store.apply({ batchId: 'b2', position: 2, changes: [add('developer', X)], tokenId: 'alice' });
    store.close();
    store = NodeStore.open({ dataDir: dir });
    assert.equal(store.has('developer', X), true);
    assert.equal(store.apply({ batchId: 'b1', position: 1, changes: [remove('developer', X)] }).results[0].superseded, true);
    assert.deepEqual(
      store.auditPage({ limit: 10 }).records.map((r) => [r.seq, r.batchId, r.superseded, r.tokenId]),
      [
        [2, 'b1', true, undefined],
        [1, 'b2', false, 'alice'],
      ],
    );
  });

  it('when a whitelist is read page by page, then the pages follow one order (case-insensitive) with no gap or repeat', () => {
    const entries = Array.from({ length: 25 }, (_, i) => eoa(0x1000 + i * 7919));
    store.apply({ batchId: 'b', position: 1, changes: entries.map((e) => add('user', e)) });
    const seen: string[] = [];
    for (let after: string | undefined; ;) {
      const page = store.listPage('user', after, 4);
      seen.push(...page.entries);
      if (page.next === undefined) break;
      after = page.next;
    }
    assert.deepEqual(
      seen,
      [...entries].sort((a, b) => (a.toLowerCase() < b.toLowerCase() ? -1 : 1)),
    );
  });

  it('when the audit trail is filtered by entry, token and time and paged by cursor, then each page is newest first and pages join without gap', () => {
    for (let i = 1; i <= 6; i++)
      store.apply({ batchId: `b${i}`, position: i, changes: [add('user', i % 2 ? X : Y)], tokenId: i <= 3 ? 'alice' : 'bob' });
    assert.deepEqual(
      store.auditPage({ entry: X, limit: 10 }).records.map((r) => r.batchId),
      ['b5', 'b3', 'b1'],
    );
    assert.deepEqual(
      store.auditPage({ tokenId: 'alice', limit: 10 }).records.map((r) => r.batchId),
      ['b3', 'b2', 'b1'],
    );
    assert.deepEqual(store.auditPage({ since: new Date(Date.now() + 60_000).toISOString(), limit: 10 }).records, []);
    const page1 = store.auditPage({ limit: 4 });
    assert.equal(page1.next, '3:0');
    const [seq, index] = page1.next.split(':').map(Number);
    const page2 = store.auditPage({ limit: 4, before: { seq, index } });
    assert.deepEqual(
      [...page1.records, ...page2.records].map((r) => r.batchId),
      ['b6', 'b5', 'b4', 'b3', 'b2', 'b1'],
    );
    assert.equal(page2.next, undefined);
  });
});

describe('storage node checkpoint thread (in-process, SQLite)', () => {
  let dir: string;
  let store: NodeStore;
  let thread: CheckpointThread | undefined;
  beforeEach(() => {
    dir = tempDataDir();
    store = NodeStore.open({ dataDir: dir });
  });
  afterEach(async () => {
    await thread?.stop();
    store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const loggedDeliveries = () => {
    const log = new SqliteDatabase(path.join(dir, DELIVERY_LOG_FILE), { readonly: true });
    try {
      return log.prepare('SELECT count(*) FROM deliveries').pluck().get() as number;
    } finally {
      log.close();
    }
  };

  it('when deliveries arrive while it runs, then it writes them into the data file and tells which ones it holds durably, the log forgets them, and the files as a crash leaves them hold every delivery', async () => {
    const written: number[] = [];
    const durable: number[] = [];
    const errors: Error[] = [];
    thread = startCheckpointThread({
      dataDir: dir,
      intervalMs: 10,
      keptChanges: DEFAULT_KEPT_CHANGES,
      onWritten: (seq) => {
        written.push(seq);
        store.writtenThrough(seq);
      },
      onDurable: (seq) => {
        durable.push(seq);
        store.forgetThrough(seq);
      },
      onError: (err) => errors.push(err),
    });
    const entries = Array.from({ length: 40 }, (_, i) => eoa(0x5000 + i));
    for (const [i, entry] of entries.entries()) {
      store.apply({ batchId: `b${i}`, position: i + 1, changes: [add('developer', entry)] });
      // The answer's turn ends here: the delivery is written out after it, checkpointed meanwhile.
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    const deadline = Date.now() + 10_000;
    while (!durable.includes(entries.length) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    assert.deepEqual(errors, []);
    assert.ok(durable.includes(entries.length), `the last delivery became durable (told: ${durable.join(', ')})`);
    for (const told of [written, durable])
      assert.deepEqual(
        told,
        [...told].sort((a, b) => a - b),
        'told in order',
      );
    assert.ok(written.length > 1, 'written out in several rounds while deliveries came');
    // Entries the thread wrote out (the store's overlay dropped them) and those still in the overlay read alike.
    for (const entry of entries) assert.equal(store.has('developer', entry), true);
    assert.equal(loggedDeliveries(), 0, 'the log forgot every delivery the data file holds');
    // Copied without closing anything: what a power cut after the last checkpoint leaves.
    const crashed = `${dir}-crashed`;
    fs.mkdirSync(crashed);
    for (const file of fs.readdirSync(dir)) fs.copyFileSync(path.join(dir, file), path.join(crashed, file));
    const reopened = NodeStore.open({ dataDir: crashed });
    try {
      assert.deepEqual(reopened.listPage('developer', undefined, 100).entries, entries);
      assert.equal(reopened.auditPage({ limit: 100 }).records.length, entries.length);
    } finally {
      reopened.close();
      fs.rmSync(crashed, { recursive: true, force: true });
    }
  });
});
