import assert from 'node:assert/strict';
import fs from 'node:fs';
import { StorageNodeReads } from '../../api/whitelists/node-reads';
import { WhitelistReads } from '../../api/whitelists/reads';
import { nodeSha256 } from '../../api/whitelists/service';
import { toChecksumAddress } from '../../domain/eoa';
import { ownerOf, replicasOf } from '../../domain/rendezvous';
import { ownerKeyOfChecksummed } from '../../domain/whitelist-messages';
import { ReplicaClient } from '../../activities/replica-repair';
import { testNodeTransport } from '../support/node-keys';
import { nodeEntries } from '../support/whitelists';
import { add, apply, kill9, killAll, startNode, tempDataDir } from './node-process';

/** The first `count` addresses (0x…01, 0x…02, …) that rendezvous hashing puts on `owner`. */
function ownedBy(owner: string, nodes: string[], count: number): string[] {
  const found: string[] = [];
  for (let i = 1; found.length < count; i++) {
    const entry = toChecksumAddress(`0x${i.toString(16).padStart(40, '0')}`);
    if (ownerOf(ownerKeyOfChecksummed({ kind: 'user', entry }), nodes, nodeSha256) === owner) found.push(entry);
  }
  return found;
}

/** Every entry the API's list route would show, page by page. */
async function listAll(reads: WhitelistReads, pageSize: number): Promise<string[]> {
  const all: string[] = [];
  for (let token: string | undefined, pages = 0; ; pages++) {
    assert.ok(pages < 100, 'the pages end');
    const page = await reads.entries('user', pageSize, token);
    all.push(...page.result);
    if (page.nextPageToken === undefined) return all;
    token = page.nextPageToken;
  }
}

describe("whitelist reads over two real nodes: a copy on a node that is not the entry's replica", function () {
  this.timeout(30_000);
  const dirs: string[] = [];
  afterEach(async () => {
    await killAll();
    for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  });

  it("when a node that does not hold an entry's replica has the newest change of it (left by a change of STORAGE_NODES), then list and membership agree on that change, on every page size, and read repair writes it to the replica", async () => {
    dirs.push(tempDataDir(), tempDataDir());
    const [first, second] = await Promise.all(dirs.map((dir) => startNode(dir)));
    const nodes = [first.url, second.url];
    const onFirst = ownedBy(first.url, nodes, 4);
    const onSecond = ownedBy(second.url, nodes, 2);
    const [stray, stale] = onFirst;
    const owned = (node: typeof first, entries: string[]) =>
      apply(node, { batchId: `b-${node.url}`, position: 1, changes: entries.map((e) => add('user', e)) });
    assert.equal((await owned(first, onFirst.slice(2))).status, 200);
    assert.equal((await owned(second, onSecond)).status, 200);
    // The newest change of `stray` reached only the other node; `stale`'s copy there is older than its removal on its replica.
    assert.equal((await apply(second, { batchId: 'stray', position: 2, changes: [add('user', stray), add('user', stale)] })).status, 200);
    assert.equal(
      (await apply(first, { batchId: 'removal', position: 3, changes: [{ op_type: 'remove_entry', kind: 'user', entry: stale }] })).status,
      200,
    );

    const transport = testNodeTransport();
    const reads = new WhitelistReads(nodes, new StorageNodeReads(5_000, transport, (n) => n), new ReplicaClient(transport, 5_000), 1);
    const expected = [stray, ...onFirst.slice(2), ...onSecond].sort((x, y) => (x.toLowerCase() < y.toLowerCase() ? -1 : 1));
    for (const pageSize of [1, 2, 3, 10]) assert.deepEqual(await listAll(reads, pageSize), expected, `page size ${pageSize}`);
    for (const entry of expected) assert.equal((await reads.membership('user', entry)).listed, true, entry);
    assert.equal((await reads.membership('user', stale)).listed, false, 'its removal is newer than the other copy');
    assert.ok((await nodeEntries(first.url, 'user')).includes(stray), 'the replica was repaired before the answer');
  });

  it("when two of an entry's three replicas hold nothing (one lost its disk, one was just added) and the third, which holds it, is down, then membership is a 503, not an answer from the empty two; a new deployment, where no node is refilled, still answers", async () => {
    dirs.push(tempDataDir(), tempDataDir(), tempDataDir(), tempDataDir());
    const started = await Promise.all(dirs.map((dir) => startNode(dir)));
    const nodes = started.map((n) => n.url);
    const entry = toChecksumAddress('0x52908400098527886e0f7030069857d2e4169ee7');
    const [lost, added, holder] = replicasOf(ownerKeyOfChecksummed({ kind: 'user', entry }), nodes, 3, nodeSha256).map((url) =>
      nodes.indexOf(url),
    );
    const transport = testNodeTransport();
    const client = new ReplicaClient(transport, 5_000);
    const reads = new WhitelistReads(nodes, new StorageNodeReads(5_000, transport, (n) => n), client, 3);
    // A new deployment: no node refilled; each entry's add is on a majority of its replicas.
    const fresh = toChecksumAddress('0x000000000000000000000000000000000000beef');
    const freshSet = replicasOf(ownerKeyOfChecksummed({ kind: 'user', entry: fresh }), nodes, 3, nodeSha256);
    const adds = [
      ...[freshSet[0], freshSet[2]].map((url) => ({ i: nodes.indexOf(url), entry: fresh })),
      ...[lost, holder].map((i) => ({ i, entry })),
    ];
    for (const { i, entry: e } of adds)
      assert.equal((await apply(started[i], { batchId: `b-${e}`, position: 1, changes: [add('user', e)] })).status, 200);
    assert.equal((await reads.membership('user', fresh)).listed, true, 'a new deployment counts its empty nodes');

    // Every node but the one just added is refilled (a pass marked them); then the add's copy on `lost` goes with its disk.
    for (const [i, node] of nodes.entries())
      if (i !== added) await client.repair(node, [], (await client.historyPage(node, 'user', undefined, 1)).replica.incarnation);
    await kill9(started[lost]);
    fs.rmSync(dirs[lost], { recursive: true, force: true });
    started[lost] = await startNode(dirs[lost], ['--port', new URL(nodes[lost]).port]);
    await kill9(started[holder]);
    await assert.rejects(reads.membership('user', entry), (err: { status?: number }) => err.status === 503);
  });
});
