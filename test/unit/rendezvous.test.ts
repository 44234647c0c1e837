import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { nodeSha256 } from '../../api/whitelists/service';
import { groupByGivenOwners, groupByOwner, groupByReplicas, majorityOf, ownerOf, replicasOf } from '../../domain/rendezvous';
import { ServiceError } from '../../domain/errors';

const NODES = ['http://127.0.0.1:7001', 'http://127.0.0.1:7002', 'http://127.0.0.1:7003'];
const keys = Array.from({ length: 1000 }, (_, i) => `developer:0x${i.toString(16).padStart(40, '0')}`);

describe('domain/rendezvous', () => {
  it('when the same key is asked for twice or with the nodes reordered, then the owner is the same', () => {
    const reversed = [...NODES].reverse();
    for (const key of keys.slice(0, 200)) {
      assert.equal(ownerOf(key, NODES), ownerOf(key, NODES));
      assert.equal(ownerOf(key, NODES), ownerOf(key, reversed));
    }
  });

  it('when owners are recomputed independently with node:crypto, then ownerOf agrees', () => {
    // Recomputed with node:crypto: the node with the highest first 8 bytes of sha256(node + '\n' + key).
    const weight = (node: string, key: string) => createHash('sha256').update(`${node}\n${key}`).digest().subarray(0, 8);
    for (const key of keys.slice(0, 50)) {
      let expected = NODES[0];
      for (const node of NODES) if (Buffer.compare(weight(node, key), weight(expected, key)) > 0) expected = node;
      assert.equal(ownerOf(key, NODES), expected, key);
    }
  });

  it('when 1,000 keys are spread over 3 nodes, then every node owns a fair share', () => {
    const counts = new Map<string, number>();
    for (const key of keys) {
      const owner = ownerOf(key, NODES);
      counts.set(owner, (counts.get(owner) ?? 0) + 1);
    }
    assert.equal(counts.size, 3);
    for (const [node, n] of counts) assert.ok(n > 250 && n < 420, `${node} owns ${n}`);
  });

  it('when a 4th node is added, then only keys that move to the new node change owner', () => {
    const added = 'http://127.0.0.1:7004';
    let moved = 0;
    for (const key of keys) {
      const before = ownerOf(key, NODES);
      const after = ownerOf(key, [...NODES, added]);
      if (after !== before) {
        assert.equal(after, added, key);
        moved++;
      }
    }
    assert.ok(moved > 180 && moved < 320, `${moved} keys moved`);
  });

  it('when items are grouped by owner, then each keeps its request index and every item appears once', () => {
    const items = keys.slice(0, 40).map((key, i) => ({ key, n: i }));
    const groups = groupByOwner(items, (it) => it.key, NODES);
    const seen: number[] = [];
    for (const [node, list] of groups) {
      assert.ok(NODES.includes(node));
      for (const { index, item } of list) {
        assert.equal(items[index], item);
        assert.equal(ownerOf(item.key, NODES), node);
        seen.push(index);
      }
      const indexes = list.map((e) => e.index);
      assert.deepEqual(
        indexes,
        [...indexes].sort((a, b) => a - b),
        'request order within a node',
      );
    }
    assert.deepEqual(
      seen.sort((a, b) => a - b),
      items.map((_, i) => i),
    );
    assert.deepEqual(
      [...groups.keys()],
      NODES.filter((n) => groups.has(n)),
      'nodes in configured order',
    );
  });

  it('when there is one node, then it owns everything; when there are none, then ownerOf throws a 500', () => {
    assert.equal(ownerOf('user:0xabc', ['only']), 'only');
    assert.throws(
      () => ownerOf('user:0xabc', []),
      (e: unknown) => e instanceof ServiceError && e.status === 500,
    );
    assert.equal(groupByOwner([], (s: string) => s, []).size, 0);
  });

  it('when ownerOf is given node:crypto SHA-256 (what the API passes), then it picks the same owners as with the default pure-JS one', () => {
    for (const key of keys) assert.equal(ownerOf(key, NODES, nodeSha256), ownerOf(key, NODES), key);
  });

  it('when the owners are given, then groupByGivenOwners groups exactly as groupByOwner does', () => {
    const items = keys.slice(0, 300);
    const owners = items.map((k) => ownerOf(k, NODES));
    assert.deepEqual(
      groupByGivenOwners(items, owners, NODES),
      groupByOwner(items, (k) => k, NODES),
    );
  });

  it('when the given owners do not fit (another length, a node not in the list), then groupByGivenOwners answers undefined', () => {
    const items = keys.slice(0, 3);
    assert.equal(groupByGivenOwners(items, [NODES[0], NODES[1]], NODES), undefined);
    assert.equal(groupByGivenOwners(items, [NODES[0], NODES[1], 'http://elsewhere:1'], NODES), undefined);
    assert.ok(groupByGivenOwners(items, [NODES[0], NODES[1], NODES[1]], NODES));
  });

  it('when an entry has N replicas, then they are N distinct nodes, the owner first, the same whatever the order of the list, capped by the node count', () => {
    for (const key of keys.slice(0, 200)) {
      const set = replicasOf(key, NODES, 2);
      assert.equal(set.length, 2);
      assert.equal(set[0], ownerOf(key, NODES));
      assert.notEqual(set[0], set[1]);
      assert.deepEqual(replicasOf(key, [...NODES].reverse(), 2), set);
      assert.deepEqual(replicasOf(key, NODES, 3, nodeSha256).sort(), [...NODES].sort());
      assert.equal(replicasOf(key, NODES, 7).length, 3);
    }
  });

  it("when a node is added, then an entry's replicas change only where the new node wins a place, and then by that one node", () => {
    const added = 'http://127.0.0.1:7004';
    let moved = 0;
    for (const key of keys) {
      const before = replicasOf(key, NODES, 2);
      const after = replicasOf(key, [...NODES, added], 2);
      if (!after.includes(added)) assert.deepEqual(after, before, key);
      else {
        moved++;
        assert.equal(after.filter((n) => !before.includes(n)).length, 1, key);
      }
    }
    // Two places of four: about half the entries take the new node in.
    assert.ok(moved > keys.length * 0.35 && moved < keys.length * 0.65, `${moved} of ${keys.length}`);
  });

  it('when replicas are grouped, then each node gets every item it holds a copy of, in request order; a set that does not fit is refused', () => {
    const items = keys.slice(0, 30);
    const sets = items.map((k) => replicasOf(k, NODES, 2));
    const groups = groupByReplicas(items, sets, NODES)!;
    for (const [node, list] of groups) {
      assert.deepEqual(
        list.map((x) => x.index),
        sets.flatMap((set, i) => (set.includes(node) ? [i] : [])),
      );
    }
    assert.equal(groupByReplicas(items, sets.slice(1), NODES), undefined);
    assert.equal(groupByReplicas(['k'], [[NODES[0], NODES[0]]], NODES), undefined);
    assert.equal(groupByReplicas(['k'], [['http://elsewhere:1']], NODES), undefined);
  });

  it('when copies are counted, then a majority is more than half', () => {
    assert.deepEqual([1, 2, 3, 4, 5].map(majorityOf), [1, 2, 2, 3, 3]);
  });
});
