import assert from 'node:assert/strict';
import fc from 'fast-check';
import { mergeAuditPages, mergeEntryPages, type AuditCursors, type NodeAuditPage } from '../../api/whitelists/merge';
import { compareEntries, type AuditRecord } from '../../contracts/storage-node-protocol';

const record = (seq: number, index: number, appliedAt: string, batchId = `b${seq}`): AuditRecord => ({
  seq,
  index,
  batchId,
  position: seq,
  revert: false,
  op_type: 'add_entry',
  kind: 'user',
  entry: `e${seq}.${index}`,
  changed: true,
  superseded: false,
  appliedAt,
});

/** A node's whole trail, newest first, served in pages of `limit` after a cursor, as the node does. */
function nodePage(node: string, trail: AuditRecord[], cursor: string | undefined, limit: number): NodeAuditPage {
  const [seq, index] = cursor?.split(':').map(Number) ?? [Infinity, Infinity];
  const rest = trail.filter((r) => r.seq < seq || (r.seq === seq && r.index < index));
  const records = rest.slice(0, limit);
  return { node, records, ...(rest.length > limit ? { next: `${records.at(-1)!.seq}:${records.at(-1)!.index}` } : {}) };
}

describe("unit: merging the storage nodes' pages (api/whitelists/merge.ts)", () => {
  it('when entry pages overlap and sort across nodes, then the merge is the first pageSize of their sorted union, with `after` only when more follow', () => {
    const a = { node: 'a', kind: 'user' as const, entries: ['0x01', '0x0C'], next: '0x0C' };
    const b = { node: 'b', kind: 'user' as const, entries: ['0x0b', '0x0C', '0x0d'] };
    assert.deepEqual(mergeEntryPages([a, b], 3), { entries: ['0x01', '0x0b', '0x0C'], after: '0x0C' });
    assert.deepEqual(mergeEntryPages([{ ...a, next: undefined }, b], 4), { entries: ['0x01', '0x0b', '0x0C', '0x0d'] });
    assert.deepEqual(mergeEntryPages([{ ...a, next: undefined }, b], 5), { entries: ['0x01', '0x0b', '0x0C', '0x0d'] });
    // Node a holds more after 0x0C (a node may send fewer than asked): nothing past it is listed yet.
    assert.deepEqual(mergeEntryPages([{ ...a, next: '0x0C' }, b], 5), { entries: ['0x01', '0x0b', '0x0C'], after: '0x0C' });
    assert.deepEqual(mergeEntryPages([], 5), { entries: [] });
  });

  it('when nodes hold copies of entries they do not own, then paging with any page size lists each owned entry once, in order, and no other copy', () => {
    const nodes = ['a', 'b', 'c'];
    const entry = fc.integer({ min: 1, max: 60 }).map((n) => `0x${n.toString(16).padStart(2, '0')}`);
    fc.assert(
      fc.property(
        fc.uniqueArray(entry, { maxLength: 30 }),
        fc.array(fc.tuple(entry, fc.constantFrom(...nodes)), { maxLength: 10 }),
        fc.integer({ min: 1, max: 7 }),
        fc.integer({ min: 0, max: 1000 }),
        (owned, strays, pageSize, seed) => {
          const owner = (e: string) => nodes[(parseInt(e, 16) + seed) % nodes.length];
          const held = new Map(nodes.map((n) => [n, new Set<string>()]));
          for (const e of owned) held.get(owner(e))!.add(e);
          // A copy on its owner is no stray: only copies elsewhere.
          for (const [e, n] of strays) if (n !== owner(e)) held.get(n)!.add(e);
          const sorted = (set: Set<string>) => [...set].sort(compareEntries);
          // Each node answers as a node does: `limit` entries after `after`, `next` when it holds more.
          const page = (n: string, after: string | undefined) => {
            const rest = sorted(held.get(n)!).filter((e) => after === undefined || compareEntries(e, after) > 0);
            const entries = rest.slice(0, pageSize);
            return { node: n, kind: 'user' as const, entries, ...(rest.length > pageSize ? { next: entries.at(-1) } : {}) };
          };
          const listed: string[] = [];
          let after: string | undefined;
          for (let pages = 0; ; pages++) {
            assert.ok(pages <= 200, 'the pages end');
            const merged = mergeEntryPages(
              nodes.map((n) => page(n, after)),
              pageSize,
              (n, e) => owner(e) === n,
            );
            listed.push(...merged.entries);
            if (merged.after === undefined) break;
            after = merged.after;
          }
          assert.deepEqual(listed, [...owned].sort(compareEntries));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('when records carry times, then the merge is newest first, ties by node', () => {
    const pages: NodeAuditPage[] = [
      { node: 'http://b', records: [record(3, 0, '2024-01-01T00:00:03.000Z'), record(1, 0, '2024-01-01T00:00:00.000Z')] },
      { node: 'http://a', records: [record(9, 1, '2024-01-01T00:00:03.000Z'), record(9, 0, '2024-01-01T00:00:02.000Z')] },
    ];
    const page = mergeAuditPages(pages, 10);
    assert.deepEqual(
      page.records.map((r) => `${r.node} ${r.entry}`),
      ['http://a e9.1', 'http://b e3.0', 'http://a e9.0', 'http://b e1.0'],
    );
    assert.equal(page.cursors, undefined, 'every node is done');
  });

  it("when any trails are paged with any page size, then the pages together are every record once, each node's in its own order (even when a clock stepped back)", () => {
    const trail = fc.array(fc.tuple(fc.integer({ min: 0, max: 50 }), fc.integer({ min: 1, max: 3 })), { maxLength: 12 }).map((batches) => {
      // Newest first; times mostly fall with seq but may jump (a clock stepping back).
      const records: AuditRecord[] = [];
      batches.forEach(([second, size], i) => {
        for (let index = 0; index < size; index++)
          records.push(record(i + 1, index, `2024-01-01T00:00:${String(second).padStart(2, '0')}.000Z`));
      });
      return records.reverse();
    });
    fc.assert(
      fc.property(fc.array(trail, { minLength: 1, maxLength: 4 }), fc.integer({ min: 1, max: 5 }), (trails, pageSize) => {
        const nodes = trails.map((_, i) => `http://n${i}`);
        const seen: string[] = [];
        let cursors: AuditCursors | undefined = {};
        for (let guard = 0; cursors && guard < 200; guard++) {
          const current: AuditCursors = cursors;
          const pages = nodes
            .filter((n) => current[n] !== null)
            .map((n, _i) => nodePage(n, trails[nodes.indexOf(n)], current[n] ?? undefined, pageSize));
          const page = mergeAuditPages(pages, pageSize, current);
          assert.ok(page.records.length <= pageSize);
          if (page.cursors) assert.ok(page.records.length === pageSize, 'only a full page says more follow');
          seen.push(...page.records.map((r) => `${r.node} ${r.entry}`));
          cursors = page.cursors;
        }
        assert.equal(cursors, undefined, 'paging ends');
        const expected = trails.flatMap((t, i) => t.map((r) => `${nodes[i]} ${r.entry}`));
        assert.deepEqual([...seen].sort(), [...expected].sort());
        for (const [i, t] of trails.entries()) {
          assert.deepEqual(
            seen.filter((s) => s.startsWith(`${nodes[i]} `)),
            t.map((r) => `${nodes[i]} ${r.entry}`),
          );
        }
      }),
    );
  });

  it('when entries differ only in case, then compareEntries orders them by value first', () => {
    assert.deepEqual(['0xB', '0xa', '0xA', '0x9'].sort(compareEntries), ['0x9', '0xA', '0xa', '0xB']);
  });
});
