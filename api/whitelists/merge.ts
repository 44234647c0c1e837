/**
 * Merging the storage nodes' pages into one answer (pure; api/whitelists/reads.ts does the I/O).
 * Each node holds a disjoint share of the entries and its own audit trail, so a page of the whole
 * is a merge of one page from every node, and the page token says where each node stands.
 */
import { compareEntries, type AuditRecord, type ListResponse } from '../../contracts/storage-node-protocol';

/** One page of the merged entry list: `after` (the last entry) when more entries follow. */
export interface EntryPage {
  entries: string[];
  after?: string;
}

/** One node's page of entries, with the node that sent it. */
export interface NodeEntryPage extends ListResponse {
  node: string;
}

/**
 * The first `pageSize` entries of the union of the nodes' pages, each asked for `pageSize` entries
 * after the same entry, keeping of each node only the entries it owns (`owns`: the rendezvous
 * placement membership asks by), so that the list never shows a copy membership would deny. A
 * node that said it holds more is complete only up to its last entry (`next`): nothing past the
 * first such bound is listed, and the next page starts there, even when the owner filter left
 * this page short or empty.
 */
export function mergeEntryPages(
  pages: readonly NodeEntryPage[],
  pageSize: number,
  owns: (node: string, entry: string) => boolean = () => true,
): EntryPage {
  let bound: string | undefined;
  for (const { next } of pages) if (next !== undefined && (bound === undefined || compareEntries(next, bound) < 0)) bound = next;
  const within = (entry: string) => bound === undefined || compareEntries(entry, bound) <= 0;
  const all = [...new Set(pages.flatMap((page) => page.entries.filter((e) => within(e) && owns(page.node, e))))].sort(compareEntries);
  const entries = all.slice(0, pageSize);
  if (all.length > pageSize) return { entries, after: entries[entries.length - 1] };
  return bound === undefined ? { entries } : { entries, after: bound };
}

/** Where one node's audit stream stands: a cursor (`seq:index`), done (null), or not started (absent). */
export type AuditCursors = Record<string, string | null>;

export interface NodeAuditPage {
  node: string;
  records: AuditRecord[];
  /** Set when the node holds more records than it sent. */
  next?: string;
}

export type MergedAuditRecord = Omit<AuditRecord, 'seq' | 'index'> & { node: string };

export interface AuditPage {
  records: MergedAuditRecord[];
  /** The cursors for the next page, or undefined when every node is done. */
  cursors?: AuditCursors;
}

/** Newest first by appliedAt, then by node, then by the node's order. */
function newer(a: { node: string; record: AuditRecord }, b: { node: string; record: AuditRecord }): boolean {
  const ta = a.record.appliedAt;
  const tb = b.record.appliedAt;
  if (ta !== tb) return ta > tb;
  if (a.node !== b.node) return a.node < b.node;
  return a.record.seq > b.record.seq || (a.record.seq === b.record.seq && a.record.index > b.record.index);
}

/**
 * A k-way merge of the nodes' newest-first pages into one page of `pageSize` records. Each node's
 * records are taken in the node's own order, so no record is skipped or repeated across pages even
 * when a node's clock stepped back; `cursors` (from the previous page) carries the nodes this page
 * did not touch. ISO-8601 UTC times of one format compare as text.
 */
export function mergeAuditPages(pages: readonly NodeAuditPage[], pageSize: number, cursors: AuditCursors = {}): AuditPage {
  const heads = pages.map(() => 0);
  const records: MergedAuditRecord[] = [];
  while (records.length < pageSize) {
    let best = -1;
    for (let p = 0; p < pages.length; p++) {
      const record = pages[p].records[heads[p]];
      if (!record) continue;
      if (best < 0 || newer({ node: pages[p].node, record }, { node: pages[best].node, record: pages[best].records[heads[best]] }))
        best = p;
    }
    if (best < 0) break;
    const { seq: _seq, index: _index, ...rest } = pages[best].records[heads[best]];
    records.push({ ...rest, node: pages[best].node });
    heads[best]++;
  }
  const next: AuditCursors = { ...cursors };
  pages.forEach((page, p) => {
    const used = heads[p];
    if (used === page.records.length && page.next === undefined) next[page.node] = null;
    else if (used > 0) next[page.node] = `${page.records[used - 1].seq}:${page.records[used - 1].index}`;
  });
  const more = Object.values(next).some((cursor) => cursor !== null) || pages.some((page) => !(page.node in next));
  return more ? { records, cursors: next } : { records };
}
