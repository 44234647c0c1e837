import assert from 'node:assert/strict';
import fc from 'fast-check';
import { mergeAuditByChange, type NodeChangeAuditPage } from '../../api/whitelists/merge';
import { compareEntries, type AuditRecord } from '../../contracts/storage-node-protocol';

/** Change `index` of batch `b{position}`, as one replica's trail keeps it (its own seq, its own time). */
const record = (position: number, index: number, appliedAt: string, seq = position, revert = false): AuditRecord => ({
  seq,
  index,
  batchId: `b${position}`,
  position,
  revert,
  op_type: 'add_entry',
  kind: 'user',
  entry: `e${position}.${index}`,
  changed: true,
  superseded: false,
  appliedAt,
});

/** Newest first in the order of changes, as a node answers `order=change`. */
const byChange = (a: AuditRecord, b: AuditRecord) =>
  b.position - a.position ||
  (a.batchId < b.batchId ? 1 : a.batchId > b.batchId ? -1 : 0) ||
  Number(b.revert) - Number(a.revert) ||
  b.index - a.index;

/** A node's page of `limit` records before the change cursor `before`, as the node serves it. */
function nodePage(node: string, trail: AuditRecord[], before: string | undefined, limit: number): NodeChangeAuditPage {
  const sorted = [...trail].sort(byChange);
  const rest = before === undefined ? sorted : sorted.filter((r) => isBefore(r, before));
  const records = rest.slice(0, limit);
  return { node, records, full: records.length >= limit };
}

/** Whether `r` comes after the cursor in newest-first order (is older than it). */
function isBefore(r: AuditRecord, cursor: string): boolean {
  const [position, revert, index, ...batch] = cursor.split(':');
  const c = { position: Number(position), revert: revert === '1', index: Number(index), batchId: batch.join(':') } as AuditRecord;
  return byChange(r, c) > 0;
}

describe("unit: merging the storage nodes' audit pages (api/whitelists/merge.ts)", () => {
  it('when replicas hold the same changes with their own times, then each change is shown once, newest first in the order of changes, named by the replica that applied it first', () => {
    const pages: NodeChangeAuditPage[] = [
      { node: 'node-1', records: [record(9, 0, '2024-01-01T00:00:09.500Z'), record(3, 0, '2024-01-01T00:00:03.000Z')], full: false },
      {
        node: 'node-2',
        records: [record(9, 0, '2024-01-01T00:00:09.100Z', 40), record(3, 0, '2024-01-01T00:00:05.000Z', 41)],
        full: false,
      },
    ];
    const page = mergeAuditByChange(pages, 10);
    assert.deepEqual(
      page.records.map((r) => `${r.node} ${r.entry} ${r.appliedAt}`),
      ['node-2 e9.0 2024-01-01T00:00:09.100Z', 'node-1 e3.0 2024-01-01T00:00:03.000Z'],
    );
    assert.equal(page.before, undefined, 'every node is done');
  });

  it('when a revert and its change are both kept, then the revert comes first (it is newer) and both are shown', () => {
    const pages: NodeChangeAuditPage[] = [
      {
        node: 'node-1',
        records: [record(5, 0, '2024-01-01T00:00:06.000Z', 2, true), record(5, 0, '2024-01-01T00:00:05.000Z', 1)],
        full: false,
      },
    ];
    assert.deepEqual(
      mergeAuditByChange(pages, 10).records.map((r) => r.revert),
      [true, false],
    );
  });

  it('when replicas hold overlapping parts of the trail and any page size pages through them, then every change is shown exactly once, newest first', () => {
    const change = fc.tuple(fc.integer({ min: 1, max: 30 }), fc.integer({ min: 0, max: 2 }), fc.boolean());
    const trail = fc.uniqueArray(change, { maxLength: 15, selector: ([p, i, r]) => `${p}:${i}:${r}` });
    fc.assert(
      fc.property(
        trail,
        fc.array(fc.array(fc.boolean(), { minLength: 15, maxLength: 15 }), { minLength: 1, maxLength: 3 }),
        fc.integer({ min: 1, max: 5 }),
        (changes, holds, pageSize) => {
          // Each node holds some of the changes (a replica behind, one wiped), under its own seq and time.
          const trails = holds.map((held, n) =>
            changes.flatMap(([position, index, revert], k) =>
              held[k] ? [record(position, index, `2024-01-01T00:00:${String(10 + n).padStart(2, '0')}.000Z`, 100 * n + k, revert)] : [],
            ),
          );
          const nodes = trails.map((_, n) => `node-${n + 1}`);
          const seen: string[] = [];
          let before: string | undefined;
          for (let guard = 0; guard < 200; guard++) {
            const page = mergeAuditByChange(
              nodes.map((node, n) => nodePage(node, trails[n], before, pageSize)),
              pageSize,
            );
            assert.ok(page.records.length <= pageSize);
            seen.push(...page.records.map((r) => `${r.position}:${r.revert ? 1 : 0}:${r.entry}`));
            if (page.before === undefined) break;
            before = page.before;
          }
          const held = changes.filter((_, k) => holds.some((h) => h[k]));
          const expected = held
            .map(([position, index, revert]) => record(position, index, '', 0, revert))
            .sort(byChange)
            .map((r) => `${r.position}:${r.revert ? 1 : 0}:${r.entry}`);
          assert.deepEqual(seen, expected);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('when entries differ only in case, then compareEntries orders them by value first', () => {
    assert.deepEqual(['0xB', '0xa', '0xA', '0x9'].sort(compareEntries), ['0x9', '0xA', '0xa', '0xB']);
  });
});
