/**
 * Merging the storage nodes' audit pages into one answer (pure; api/whitelists/reads.ts does the
 * I/O). A change applied by several replicas is in each one's trail under the same key, so a page
 * of the whole is a merge of one page from every node in the order of changes, each change once.
 * (The entries' merge is activities/replica-repair.ts replicaPage, shared with the repair.)
 */
import { auditChangeKey, type AuditRecord } from '../../contracts/storage-node-protocol';

export type MergedAuditRecord = Omit<AuditRecord, 'seq' | 'index'> & { node: string };

/** One node's page of audit records in the order of changes; `full` when it may hold more. */
export interface NodeChangeAuditPage {
  node: string;
  records: AuditRecord[];
  full: boolean;
}

/** Descending comparison of records in the order of changes: position, batchId, revert, index. */
function newerChange(a: AuditRecord, b: AuditRecord): number {
  if (a.position !== b.position) return b.position - a.position;
  if (a.batchId !== b.batchId) return a.batchId < b.batchId ? 1 : -1;
  if (a.revert !== b.revert) return a.revert ? -1 : 1;
  return b.index - a.index;
}

/**
 * The nodes' pages (each newest first in the order of changes, asked from the same cursor) as one
 * page of `pageSize` changes, each change once: the copies of one change on several replicas have
 * one key (auditChangeKey), and the earliest `appliedAt` names the node and time. A node whose page
 * was full is complete only down to its last record: nothing older is shown, and `before` (the last
 * change shown) starts the next page, so no change is skipped or shown twice across pages.
 */
export function mergeAuditByChange(
  pages: readonly NodeChangeAuditPage[],
  pageSize: number,
): { records: MergedAuditRecord[]; before?: string } {
  let bound: AuditRecord | undefined;
  for (const page of pages) {
    const last = page.records.at(-1);
    if (page.full && last && (bound === undefined || newerChange(last, bound) < 0)) bound = last;
  }
  const byKey = new Map<string, { record: AuditRecord; node: string }>();
  for (const page of pages)
    for (const record of page.records) {
      if (bound !== undefined && newerChange(record, bound) > 0) continue;
      const key = auditChangeKey(record);
      const known = byKey.get(key);
      if (!known || record.appliedAt < known.record.appliedAt) byKey.set(key, { record, node: page.node });
    }
  const ordered = [...byKey.values()].sort((a, b) => newerChange(a.record, b.record));
  const shown = ordered.slice(0, pageSize);
  const records = shown.map(({ record: { seq: _seq, index: _index, ...rest }, node }) => ({ ...rest, node }));
  const more = ordered.length > pageSize || bound !== undefined;
  const last = shown.at(-1)?.record;
  return { records, ...(more && last ? { before: auditChangeKey(last) } : {}) };
}
