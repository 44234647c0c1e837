import assert from 'node:assert/strict';
import fs from 'node:fs';
import { toChecksumAddress } from '../../domain/eoa';
import { ReplicaClient, replicaPage, repairsOf } from '../../activities/replica-repair';
import { ROUTES } from '../../contracts/storage-node-protocol';
import { testNodeTransport } from '../support/node-keys';
import { add, apply, kill9, killAll, list, remove, request, startNode, tempDataDir, type NodeProcess } from './node-process';

const entries = Array.from({ length: 40 }, (_, i) => toChecksumAddress(`0x${(i + 1).toString(16).padStart(40, 'a')}`));

/** One pass of the repair activity's steps over the nodes (three replicas each), page by page. */
async function repairPass(client: ReplicaClient, nodes: string[], limit: number): Promise<number> {
  let repaired = 0;
  for (let after: string | undefined, guard = 0; guard < 100; guard++) {
    const page = await replicaPage(client, { nodes, replicas: 3 }, 'user', after, limit);
    for (const [node, list] of repairsOf('user', page.views)) repaired += (await client.repair(node, list)) > 0 ? list.length : 0;
    if (page.next === undefined) return repaired;
    after = page.next;
  }
  throw new Error('the pages did not end');
}

describe('storage node: replica histories and the repair route (real processes, signed requests)', function () {
  this.timeout(60_000);
  const dirs: string[] = [];
  afterEach(async () => {
    await killAll();
    for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('when a node comes back with an empty disk, then a repair pass refills it with every add and every removal (its tombstone), in their order, and the refill survives kill -9', async () => {
    dirs.push(tempDataDir(), tempDataDir(), tempDataDir());
    const started: NodeProcess[] = await Promise.all(dirs.map((dir) => startNode(dir)));
    const nodes = started.map((n) => n.url);
    // Every node gets the adds; the removals of the first ten reach all three too.
    for (const node of started) {
      assert.equal((await apply(node, { batchId: 'adds', position: 1, changes: entries.map((e) => add('user', e)) })).status, 200);
      const removals = entries.slice(0, 10).map((e) => remove('user', e));
      assert.equal(
        (await apply(node, { batchId: 'removals', position: 2, changes: removals, indexes: removals.map((_, i) => i + 3) })).status,
        200,
      );
    }
    const expected = entries.slice(10);
    // Node 3 loses its disk.
    await kill9(started[2]);
    fs.rmSync(dirs[2], { recursive: true, force: true });
    const port = new URL(nodes[2]).port;
    started[2] = await startNode(dirs[2], ['--port', port]);
    assert.deepEqual(await list(started[2], 'user'), []);

    const client = new ReplicaClient(testNodeTransport(), 5_000);
    const before = (await client.historyPage(nodes[0], 'user', undefined, 1)).replica;
    const wiped = (await client.historyPage(nodes[2], 'user', undefined, 1)).replica;
    assert.equal(wiped.refilled, false, 'a node back empty does not count toward read majorities');
    // Small pages: the pass crosses page bounds, tombstones included.
    assert.equal(await repairPass(client, nodes, 7), entries.length, 'one repair per entry, on the wiped node only');
    assert.equal(await repairPass(client, nodes, 7), 0, 'a second pass finds nothing to do');
    assert.deepEqual(await list(started[2], 'user'), await list(started[0], 'user'));
    assert.equal((await list(started[2], 'user')).length, expected.length);
    // A late copy of the old add, at its old place in the order, does not bring a removed entry back.
    assert.equal((await apply(started[2], { batchId: 'adds', position: 1, changes: [add('user', entries[0])] })).status, 200);
    assert.equal((await request(`${nodes[2]}${ROUTES.listPrefix}user/${entries[0]}`)).json().listed, false);

    // Only a pass that filled this incarnation marks it refilled: a mark for another is ignored.
    await client.repair(nodes[2], [], before.incarnation);
    assert.equal((await client.historyPage(nodes[2], 'user', undefined, 1)).replica.refilled, false);
    await client.repair(nodes[2], [], wiped.incarnation);
    assert.deepEqual((await client.historyPage(nodes[2], 'user', undefined, 1)).replica, { ...wiped, refilled: true });

    await kill9(started[2]);
    started[2] = await startNode(dirs[2], ['--port', port]);
    assert.deepEqual(await list(started[2], 'user'), await list(started[0], 'user'), 'what the repair acknowledged survives kill -9');
    assert.deepEqual((await client.historyPage(nodes[2], 'user', undefined, 1)).replica, { ...wiped, refilled: true });
  });

  it('when a repair request is not signed for this node, or names an entry off its EIP-55 form, then it is refused and nothing changes', async () => {
    dirs.push(tempDataDir());
    const node = await startNode(dirs[0]);
    const body = JSON.stringify({
      entries: [{ kind: 'user', entry: entries[0].toLowerCase(), history: { base: { present: true }, changes: [] } }],
    });
    assert.equal((await request(`${node.url}${ROUTES.repair}`, { method: 'POST', body })).status, 400);
    const unsigned = await fetch(`${node.url}${ROUTES.repair}`, { method: 'POST', body });
    assert.equal(unsigned.status, 401);
    assert.deepEqual(await list(node, 'user'), []);
  });
});
