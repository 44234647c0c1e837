import fs from 'node:fs';
import path from 'node:path';
import { fsyncDirectory } from '../lib/durable-fs';
import { AuditTrail } from './audit-trail';
import { BatchLog } from './log-store';
import type { ApplyRequest, ApplyResponse, AuditResponse, ListResponse, WhitelistKind } from './protocol';
import { readSnapshot, writeSnapshot } from './snapshot-store';
import type { AuditSelection } from './validate';
import { DEFAULT_REMEMBERED_BATCHES, toApplyResponse, WhitelistState } from './whitelist-state';

export const LOG_FILE = 'batches.log';
export const SNAPSHOT_FILE = 'snapshot.json';
/** The audit archive: every batch the log ever held, copied here before a compaction empties the log. */
export const AUDIT_FILE = 'audit.log';
export const DEFAULT_COMPACT_AFTER_BATCHES = 1_000;
/** A byte bound too, so a few huge batches cannot grow the log (and the replay at start) unchecked. */
export const DEFAULT_COMPACT_AFTER_BYTES = 64 * 1024 * 1024;

export interface WhitelistStoreOptions {
  dataDir: string;
  /** Compact once the log holds this many batches. */
  compactAfterBatches?: number;
  /** Compact once the log file is this many bytes. */
  compactAfterBytes?: number;
  /** How many batchIds stay remembered for idempotency. */
  maxRememberedBatches?: number;
  /** Called with errors the store survives (a failed compaction); defaults to stderr. */
  onError?: (err: Error) => void;
}

/** The answer to an apply: a fresh or repeated result, or a batchId reused for other changes. */
export type ApplyOutcome = { type: 'applied' | 'repeat'; response: ApplyResponse } | { type: 'conflict' };

/** What `open` found on disk, for logs and tests. */
export interface RecoveryReport {
  fromSnapshot: boolean;
  replayedBatches: number;
  tornBytes: number;
}

/**
 * The durable whitelists of one node: the in-memory state, backed by a snapshot plus an
 * append-only log in `dataDir`. Every applied batch is in the log, fsynced, before `apply`
 * returns; the log is folded into a new snapshot every so often.
 */
export class WhitelistStore {
  private constructor(
    private readonly state: WhitelistState,
    private readonly log: BatchLog,
    private readonly audit: AuditTrail,
    private lastSeq: number,
    private readonly options: Required<WhitelistStoreOptions>,
    readonly recovery: RecoveryReport,
  ) {}

  /** Opens the store in `dataDir` (created if missing), replaying snapshot and log. */
  static open(options: WhitelistStoreOptions): WhitelistStore {
    const settings: Required<WhitelistStoreOptions> = {
      dataDir: options.dataDir,
      compactAfterBatches: options.compactAfterBatches ?? DEFAULT_COMPACT_AFTER_BATCHES,
      compactAfterBytes: options.compactAfterBytes ?? DEFAULT_COMPACT_AFTER_BYTES,
      maxRememberedBatches: options.maxRememberedBatches ?? DEFAULT_REMEMBERED_BATCHES,
      onError: options.onError ?? ((err) => console.error(`storage-node: ${err.message}`)),
    };
    if (!fs.existsSync(settings.dataDir)) {
      fs.mkdirSync(settings.dataDir, { recursive: true });
      // The new directory's own name must be durable too, or a power loss could lose it whole.
      fsyncDirectory(path.dirname(settings.dataDir));
    }
    const snapshot = readSnapshot(path.join(settings.dataDir, SNAPSHOT_FILE));
    const state = snapshot
      ? WhitelistState.fromImage(snapshot, settings.maxRememberedBatches)
      : new WhitelistState(settings.maxRememberedBatches);
    const { log, contents } = BatchLog.open(path.join(settings.dataDir, LOG_FILE));
    const snapshotSeq = snapshot?.lastSeq ?? 0;
    // Records at or below the snapshot's seq are already in it: a crash came between writing the
    // snapshot and emptying the log. Replaying them again would re-remember stale batches.
    const fresh = contents.records.filter((record) => record.seq > snapshotSeq);
    for (const record of fresh) state.commit(record);
    const audit = AuditTrail.open(path.join(settings.dataDir, AUDIT_FILE), contents.records);
    const lastSeq = Math.max(snapshotSeq, contents.records.at(-1)?.seq ?? 0, audit.lastSeq);
    const recovery = { fromSnapshot: snapshot !== undefined, replayedBatches: fresh.length, tornBytes: contents.tornBytes };
    const store = new WhitelistStore(state, log, audit, lastSeq, settings, recovery);
    if (fresh.length < contents.records.length || store.logIsFull()) store.tryCompact();
    return store;
  }

  /**
   * Applies a batch durably, or answers a repeated batchId from its record. Throws when the log
   * cannot be written; nothing is applied then.
   */
  apply(request: ApplyRequest): ApplyOutcome {
    const { batchId, changes, tokenId, revertOf } = request;
    const plan = this.state.plan(batchId, changes, { tokenId, revertOf, appliedAt: new Date().toISOString() });
    if (plan.type === 'conflict') return { type: 'conflict' };
    if (plan.type === 'repeat') return { type: 'repeat', response: toApplyResponse(plan.record) };
    const logged = { ...plan.record, seq: this.lastSeq + 1 };
    this.log.append(logged);
    this.lastSeq += 1;
    this.state.commit(plan.record);
    this.audit.add(logged);
    if (this.logIsFull()) this.tryCompact();
    return { type: 'applied', response: toApplyResponse(plan.record) };
  }

  /** The sorted entries of one whitelist. */
  list(kind: WhitelistKind): string[] {
    return this.state.entries(kind);
  }

  /** One page of a whitelist: at most `limit` entries after `after` (compareEntries order). */
  listPage(kind: WhitelistKind, after: string | undefined, limit: number): ListResponse {
    const { entries, more } = this.state.page(kind, after, limit);
    return { kind, entries, ...(more && entries.length > 0 ? { next: entries[entries.length - 1] } : {}) };
  }

  /** Whether `entry` (exactly this text) is on the whitelist. */
  has(kind: WhitelistKind, entry: string): boolean {
    return this.state.has(kind, entry);
  }

  /** One page of the audit trail, newest first. */
  auditPage(selection: AuditSelection): AuditResponse {
    return this.audit.page(selection);
  }

  /** Closes the log files. */
  close(): void {
    this.log.close();
    this.audit.close();
  }

  private logIsFull(): boolean {
    return this.log.recordCount >= this.options.compactAfterBatches || this.log.byteLength >= this.options.compactAfterBytes;
  }

  // A failed compaction loses nothing (the log still holds every batch), so it is reported and
  // retried after the next batch instead of failing the request that triggered it.
  private tryCompact(): void {
    try {
      // Archive first: once the log is emptied, the archive is the only copy of its history.
      this.audit.archiveAll();
      writeSnapshot(this.options.dataDir, path.join(this.options.dataDir, SNAPSHOT_FILE), {
        lastSeq: this.lastSeq,
        ...this.state.toImage(),
      });
      this.log.reset();
    } catch (err) {
      this.options.onError(new Error(`compaction failed: ${(err as Error).message}`));
    }
  }
}
