import { BatchLog, type LoggedBatch } from './log-store';
import type { AuditRecord, AuditResponse } from './protocol';
import type { AuditSelection } from './validate';

/** The batchId suffix the batch workflow gives a revert (workflows/whitelist-batch.ts). */
const REVERT_SUFFIX = ':revert';

/**
 * The change records of one applied batch, oldest first. A revert names the batch it undoes:
 * from `revertOf`, or for records written before that field existed, from the `:revert` suffix.
 */
export function auditRecordsOf(batch: LoggedBatch): AuditRecord[] {
  const legacyRevert = batch.revertOf === undefined && batch.appliedAt === undefined && batch.batchId.endsWith(REVERT_SUFFIX);
  const revertOf = batch.revertOf ?? (legacyRevert ? batch.batchId.slice(0, -REVERT_SUFFIX.length) : undefined);
  return batch.changes.map((change, index) => ({
    seq: batch.seq,
    index,
    batchId: revertOf ?? batch.batchId,
    revert: revertOf !== undefined,
    op_type: change.op_type,
    kind: change.kind,
    entry: change.entry,
    changed: batch.changed[index],
    ...(batch.tokenId === undefined ? {} : { tokenId: batch.tokenId }),
    ...(batch.appliedAt === undefined ? {} : { appliedAt: batch.appliedAt }),
  }));
}

function matches(record: AuditRecord, selection: AuditSelection): boolean {
  if (selection.kind !== undefined && record.kind !== selection.kind) return false;
  if (selection.entry !== undefined && record.entry !== selection.entry) return false;
  if (selection.tokenId !== undefined && record.tokenId !== selection.tokenId) return false;
  if (selection.since !== undefined && (record.appliedAt === undefined || Date.parse(record.appliedAt) < Date.parse(selection.since)))
    return false;
  return true;
}

/**
 * Every batch this node has applied, kept for good: the batch log's records are copied into an
 * append-only archive (`audit.log`, the same line format) before a compaction empties the log, so
 * the archive plus the log's tail is the whole history. Reads are served from memory.
 */
export class AuditTrail {
  private constructor(
    private readonly archive: BatchLog,
    /** Archived batches, then the log's batches not archived yet; seq ascending. */
    private readonly history: LoggedBatch[],
    private archivedSeq: number,
  ) {}

  /**
   * Opens the archive at `file` (cutting a torn last line, like the log) and joins the batch
   * log's records that it does not hold yet. Throws on a corrupt record before the last line.
   */
  static open(file: string, logRecords: readonly LoggedBatch[]): AuditTrail {
    const { log, contents } = BatchLog.open(file);
    const archivedSeq = contents.records.at(-1)?.seq ?? 0;
    // A compaction that crashed after archiving but before emptying the log left those records in both.
    const tail = logRecords.filter((record) => record.seq > archivedSeq);
    return new AuditTrail(log, [...contents.records, ...tail], archivedSeq);
  }

  /** The highest seq the trail holds (0 when empty). */
  get lastSeq(): number {
    return this.history.at(-1)?.seq ?? 0;
  }

  /** Records a batch the log has just made durable. */
  add(batch: LoggedBatch): void {
    this.history.push(batch);
  }

  /** Copies every batch not yet archived into the archive (one fsync); call before emptying the log. */
  archiveAll(): void {
    const pending = this.history.filter((batch) => batch.seq > this.archivedSeq);
    this.archive.appendAll(pending);
    this.archivedSeq = pending.at(-1)?.seq ?? this.archivedSeq;
  }

  /** The records `selection` picks, newest first (seq, index descending), one page of them. */
  page(selection: AuditSelection): AuditResponse {
    const records: AuditRecord[] = [];
    const { before } = selection;
    for (let b = this.history.length - 1; b >= 0; b--) {
      const batch = this.history[b];
      if (before && batch.seq > before.seq) continue;
      const changes = auditRecordsOf(batch);
      for (let i = changes.length - 1; i >= 0; i--) {
        const record = changes[i];
        if (before && record.seq === before.seq && record.index >= before.index) continue;
        if (!matches(record, selection)) continue;
        if (records.length === selection.limit) {
          const last = records[records.length - 1];
          return { records, next: `${last.seq}:${last.index}` };
        }
        records.push(record);
      }
    }
    return { records };
  }

  close(): void {
    this.archive.close();
  }
}
