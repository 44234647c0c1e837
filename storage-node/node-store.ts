import fs from 'node:fs';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { fsyncDirectory } from '../lib/durable-fs';
import { applyChange, DEFAULT_KEPT_CHANGES, emptyHistory, isPresent, revertChange, type EntryHistory } from './entry-order';
import type {
  ApplyRequest,
  ApplyResponse,
  AuditRecord,
  AuditResponse,
  ListResponse,
  OpType,
  WhitelistKind,
} from '../contracts/storage-node-protocol';
import type { AuditSelection } from './validate';

/** The node's data file (SQLite, WAL mode): entries, their recent changes, the audit trail. */
export const DATABASE_FILE = 'whitelists.db';
/** The delivery log (SQLite, WAL, fsynced at each delivery): the deliveries the data file may not hold yet. */
export const DELIVERY_LOG_FILE = 'deliveries.db';

export interface NodeStoreOptions {
  dataDir: string;
  /** How many changes each entry keeps for ordering late deliveries and reverts (entry-order.ts). */
  keptChanges?: number;
}

// An entry's row holds its presence (for lists, by index) and its recent changes (JSON, bounded by
// keptChanges). The audit trail has one row per delivered change, read by index and cursor, never whole.
const SCHEMA = `
CREATE TABLE IF NOT EXISTS entries (
  kind TEXT NOT NULL,
  entry TEXT NOT NULL,
  present INTEGER NOT NULL,
  sort_key TEXT NOT NULL,
  history TEXT NOT NULL,
  PRIMARY KEY (kind, entry)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS entries_listed ON entries (kind, present, sort_key, entry);
CREATE TABLE IF NOT EXISTS audit (
  seq INTEGER NOT NULL,
  idx INTEGER NOT NULL,
  batch_id TEXT NOT NULL,
  position INTEGER NOT NULL,
  revert INTEGER NOT NULL,
  op_type TEXT NOT NULL,
  kind TEXT NOT NULL,
  entry TEXT NOT NULL,
  changed INTEGER NOT NULL,
  superseded INTEGER NOT NULL,
  token_id TEXT,
  applied_at TEXT NOT NULL,
  PRIMARY KEY (seq, idx)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (
  key TEXT PRIMARY KEY,
  value INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_by_entry ON audit (entry, seq, idx);
CREATE INDEX IF NOT EXISTS audit_by_token ON audit (token_id, seq, idx);
CREATE INDEX IF NOT EXISTS audit_by_time ON audit (applied_at, seq, idx);
`;

const LOG_SCHEMA = 'CREATE TABLE IF NOT EXISTS deliveries (seq INTEGER PRIMARY KEY, delivery TEXT NOT NULL);';

/** What an emptied WAL file is cut back to (bytes): the log's holds about a second of deliveries, the data file's more. */
const LOG_WAL_LIMIT_BYTES = 4 * 1024 * 1024;
const DATA_WAL_LIMIT_BYTES = 64 * 1024 * 1024;

/** How a checkpoint treats writers: PASSIVE never waits for them, FULL makes them wait until it is done. */
export type CheckpointMode = 'PASSIVE' | 'FULL' | 'TRUNCATE';

interface EntryRow {
  history: string;
}

interface EntryKeyRow extends EntryRow {
  kind: string;
  entry: string;
}

interface AuditRow {
  seq: number;
  idx: number;
  batch_id: string;
  position: number;
  revert: number;
  op_type: OpType;
  kind: WhitelistKind;
  entry: string;
  changed: number;
  superseded: number;
  token_id: string | null;
  applied_at: string;
}

const entryKey = (kind: string, entry: string) => `${kind}\n${entry}`;

/** A delivery as the log keeps it: the request and when it was answered. What it did follows from these. */
interface LoggedDelivery {
  request: ApplyRequest;
  appliedAt: string;
}

/** An entry whose history a delivery changed. */
interface ChangedEntry {
  kind: WhitelistKind;
  entry: string;
  history: EntryHistory;
}

/** An audit row of a delivery: index, op_type, kind, entry, changed, superseded. */
type AuditedChange = [number, OpType, WhitelistKind, string, number, number];

/**
 * What one delivery does, from the histories of its entries before it (`histories`, updated in
 * place): each change takes its place in its entry's order (entry-order.ts) and gets an audit row
 * (a repeat of a delivery gets none). Pure, so that the answer given at delivery and the rows
 * written later from the log are the same.
 */
function deliver(
  request: ApplyRequest,
  histories: Map<string, EntryHistory>,
  keptChanges: number,
): { response: ApplyResponse; changed: Map<string, ChangedEntry>; audit: AuditedChange[] } {
  const step = request.revert ? revertChange : applyChange;
  const changed = new Map<string, ChangedEntry>();
  const audit: AuditedChange[] = [];
  const results = request.changes.map((change, index) => {
    const k = entryKey(change.kind, change.entry);
    const before = histories.get(k) ?? emptyHistory();
    const order = { position: request.position, batchId: request.batchId, index };
    const { history, verdict, repeat } = step(before, order, change.op_type, keptChanges);
    if (history !== before) {
      // A later change to the same entry in this delivery sees this one.
      histories.set(k, history);
      changed.set(k, { kind: change.kind, entry: change.entry, history });
    }
    // A repeat did nothing new: the trail already holds its first delivery.
    if (!repeat) audit.push([index, change.op_type, change.kind, change.entry, verdict.changed ? 1 : 0, verdict.superseded ? 1 : 0]);
    return { op_type: change.op_type, kind: change.kind, entry: change.entry, changed: verdict.changed, superseded: verdict.superseded };
  });
  return { response: { batchId: request.batchId, results }, changed, audit };
}

const toAuditRecord = (row: AuditRow): AuditRecord => ({
  seq: row.seq,
  index: row.idx,
  batchId: row.batch_id,
  position: row.position,
  revert: row.revert === 1,
  op_type: row.op_type,
  kind: row.kind,
  entry: row.entry,
  changed: row.changed === 1,
  superseded: row.superseded === 1,
  ...(row.token_id === null ? {} : { tokenId: row.token_id }),
  appliedAt: row.applied_at,
});

/**
 * Writes logged deliveries into the data file, from one pair of connections to the node's two
 * files: the store's own, or the checkpoint thread's. Each call writes, in one transaction, every
 * delivery the log holds after the file's `written` mark, in order, and moves the mark; so two
 * writers (the thread in the background, the store before a read) never write one twice, and what
 * a crash interrupted is written by the next call.
 */
export class DeliveryWriter {
  private readonly statements;

  constructor(
    private readonly db: SqliteDatabase.Database,
    log: SqliteDatabase.Database,
    private readonly keptChanges: number,
  ) {
    this.statements = {
      // A share's entries are read with one statement (their keys passed as JSON); rows are
      // written one prepared statement each, which measured faster than unpacking JSON in SQL.
      entries: db.prepare<[string], EntryKeyRow>(
        "SELECT kind, entry, history FROM entries WHERE (kind, entry) IN (SELECT value ->> '$[0]', value ->> '$[1]' FROM json_each(?))",
      ),
      saveEntry: db.prepare<[string, string, number, string, string]>(
        'INSERT INTO entries (kind, entry, present, sort_key, history) VALUES (?, ?, ?, ?, ?) ' +
          'ON CONFLICT (kind, entry) DO UPDATE SET present = excluded.present, history = excluded.history',
      ),
      audit: db.prepare<[number, number, string, number, number, string, string, string, number, number, string | null, string]>(
        'INSERT INTO audit (seq, idx, batch_id, position, revert, op_type, kind, entry, changed, superseded, token_id, applied_at) ' +
          'VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
      ),
      written: db.prepare<[], number>("SELECT value FROM meta WHERE key = 'written'").pluck(),
      setWritten: db.prepare<[number]>(
        "INSERT INTO meta (key, value) VALUES ('written', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
      ),
      loggedAfter: log.prepare<[number], { seq: number; delivery: string }>(
        'SELECT seq, delivery FROM deliveries WHERE seq > ? ORDER BY seq',
      ),
    };
  }

  /** The newest delivery the data file holds. */
  written(): number {
    return (this.statements.written.get() as number | undefined) ?? 0;
  }

  /** The histories the data file holds for `keys` ([kind, entry] pairs), into `into`. */
  readHistories(keys: Array<[string, string]>, into: Map<string, EntryHistory>): void {
    if (keys.length === 0) return;
    for (const row of this.statements.entries.all(JSON.stringify(keys)))
      into.set(entryKey(row.kind, row.entry), JSON.parse(row.history) as EntryHistory);
  }

  /**
   * Copies the data file's WAL into it and syncs it. Returns the newest delivery the file now
   * holds durably, or undefined when part of the WAL could not be copied (a reader or, in PASSIVE
   * mode, a writer was in the way); the mark is read before the copy starts, so whatever
   * committed it is in the copied part.
   */
  checkpoint(mode: CheckpointMode): number | undefined {
    const written = this.written();
    const [{ busy, log: walFrames, checkpointed }] = this.db.pragma(`wal_checkpoint(${mode})`) as Array<{
      busy: number;
      log: number;
      checkpointed: number;
    }>;
    return busy === 0 && checkpointed === walFrames ? written : undefined;
  }

  /** Writes what the log holds after the `written` mark; returns the new mark. */
  writeLogged(): number {
    return this.db
      .transaction(() => {
        const written = this.written();
        const rows = this.statements.loggedAfter.all(written);
        if (rows.length === 0) return written;
        // Every entry these deliveries touch, as the last of them left it: written once.
        const histories = new Map<string, EntryHistory>();
        const changed = new Map<string, ChangedEntry>();
        for (const row of rows) {
          const { request, appliedAt } = JSON.parse(row.delivery) as LoggedDelivery;
          this.readHistories(
            request.changes.filter((c) => !histories.has(entryKey(c.kind, c.entry))).map((c) => [c.kind, c.entry]),
            histories,
          );
          const delivered = deliver(request, histories, this.keptChanges);
          for (const [k, entry] of delivered.changed) changed.set(k, entry);
          for (const [index, opType, kind, entry, isChanged, superseded] of delivered.audit)
            this.statements.audit.run(
              row.seq,
              index,
              request.batchId,
              request.position,
              request.revert ? 1 : 0,
              opType,
              kind,
              entry,
              isChanged,
              superseded,
              request.tokenId ?? null,
              appliedAt,
            );
        }
        for (const { kind, entry, history } of changed.values())
          this.statements.saveEntry.run(kind, entry, isPresent(history) ? 1 : 0, entry.toLowerCase(), JSON.stringify(history));
        const last = rows[rows.length - 1].seq;
        this.statements.setWritten.run(last);
        return last;
      })
      .immediate();
  }
}

/** Opens one of the node's files in WAL mode; checkpoints are the node's own, never SQLite's automatic ones. */
export function openNodeFile(dataDir: string, file: string, synchronous: 'FULL' | 'NORMAL'): SqliteDatabase.Database {
  const db = new SqliteDatabase(path.join(dataDir, file));
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${synchronous}`);
  db.pragma('wal_autocheckpoint = 0');
  // An emptied WAL file is cut back to this, not deleted, so that the next writes overwrite blocks.
  db.pragma(`journal_size_limit = ${file === DELIVERY_LOG_FILE ? LOG_WAL_LIMIT_BYTES : DATA_WAL_LIMIT_BYTES}`);
  return db;
}

/**
 * The durable whitelists of one node in two SQLite files. A delivery is answered once its one row
 * in the delivery log is committed (synchronous=FULL: fsynced), so an acknowledged change
 * survives a crash or power loss. Its entries and audit rows are written into the data file
 * later, from the log, by the checkpoint thread (checkpoint-thread.ts) or before a read, and at
 * the next open if the process died first; meanwhile the store answers from its overlay of the
 * entries those deliveries changed. Opening replays only what the log holds after the data file's
 * mark, whatever the size of the audit trail.
 */
export class NodeStore {
  private readonly keptChanges: number;
  private seq: number;
  private readonly writer: DeliveryWriter;
  private readonly statements;
  /** Entries changed by deliveries the data file may not hold yet, with the newest such delivery. */
  private readonly overlay = new Map<string, { history: EntryHistory; seq: number }>();
  /** The newest delivery the data file is known to hold. */
  private written: number;

  private constructor(
    private readonly db: SqliteDatabase.Database,
    private readonly log: SqliteDatabase.Database,
    keptChanges: number,
  ) {
    this.keptChanges = keptChanges;
    this.writer = new DeliveryWriter(db, log, keptChanges);
    this.statements = {
      entry: db.prepare<[string, string], EntryRow>('SELECT history FROM entries WHERE kind = ? AND entry = ?'),
      logDelivery: log.prepare<[number, string]>('INSERT INTO deliveries (seq, delivery) VALUES (?, ?)'),
      forgetDeliveries: log.prepare<[number]>('DELETE FROM deliveries WHERE seq <= ?'),
      page: db.prepare<[string, string, string, string, number], { entry: string }>(
        'SELECT entry FROM entries WHERE kind = ? AND present = 1 AND ' +
          '(sort_key > ? OR (sort_key = ? AND entry > ?)) ORDER BY sort_key, entry LIMIT ?',
      ),
    };
    // Deliveries acknowledged before a crash or power loss but not in the data file: written out now.
    this.written = this.writer.writeLogged();
    const maxSeq = (d: SqliteDatabase.Database, table: string) =>
      (d.prepare(`SELECT max(seq) FROM ${table}`).pluck().get() as number | null) ?? 0;
    // The mark too: the newest delivery may have left no audit row (a repeat) and no log row (forgotten).
    this.seq = Math.max(this.written, maxSeq(db, 'audit'), maxSeq(log, 'deliveries'));
  }

  /** Opens (creating if needed) the store in `dataDir`. */
  static open(options: NodeStoreOptions): NodeStore {
    if (!fs.existsSync(options.dataDir)) {
      fs.mkdirSync(options.dataDir, { recursive: true });
      // The new directory's own name must be durable too, or a power loss could lose it whole.
      fsyncDirectory(path.dirname(options.dataDir));
    }
    // The log is fsynced at each delivery and holds about a second of them; the data file is
    // synced only by checkpoints (synchronous=NORMAL in WAL mode), after which the log forgets
    // what the file holds.
    const log = openNodeFile(options.dataDir, DELIVERY_LOG_FILE, 'FULL');
    log.exec(LOG_SCHEMA);
    const db = openNodeFile(options.dataDir, DATABASE_FILE, 'NORMAL');
    db.exec(SCHEMA);
    return new NodeStore(db, log, options.keptChanges ?? DEFAULT_KEPT_CHANGES);
  }

  /**
   * Delivers one node share (or its revert) and answers what each change did. The delivery is
   * committed as one log row before this returns. Throws when the log cannot be written; nothing
   * is applied then.
   */
  apply(request: ApplyRequest): ApplyResponse {
    const seq = this.seq + 1;
    // Each entry's history: from a delivery the data file may not hold yet, else from the file.
    const histories = new Map<string, EntryHistory>();
    const unread: Array<[string, string]> = [];
    for (const { kind, entry } of request.changes) {
      const pending = this.overlay.get(entryKey(kind, entry));
      if (pending) histories.set(entryKey(kind, entry), pending.history);
      else unread.push([kind, entry]);
    }
    this.writer.readHistories(unread, histories);
    const { response, changed } = deliver(request, histories, this.keptChanges);
    const logged: LoggedDelivery = { request, appliedAt: new Date().toISOString() };
    this.statements.logDelivery.run(seq, JSON.stringify(logged));
    this.seq = seq;
    for (const [k, { history }] of changed) this.overlay.set(k, { history, seq });
    return response;
  }

  /** Writes into the data file what the log holds beyond it (reads call it first, so they see every acknowledged delivery). */
  materialize(): void {
    this.writtenThrough(this.writer.writeLogged());
  }

  /** The data file holds every delivery up to `seq` (written here or by the checkpoint thread): the overlay drops them. */
  writtenThrough(seq: number): void {
    if (seq <= this.written) return;
    this.written = seq;
    for (const [k, { seq: last }] of this.overlay) if (last <= seq) this.overlay.delete(k);
  }

  /** One page of a whitelist: at most `limit` entries after `after` (compareEntries order). */
  listPage(kind: WhitelistKind, after: string | undefined, limit: number): ListResponse {
    this.materialize();
    const from = after ?? '';
    const rows = this.statements.page.all(kind, from.toLowerCase(), from.toLowerCase(), from, limit + 1);
    const entries = rows.slice(0, limit).map((r) => r.entry);
    return { kind, entries, ...(rows.length > limit ? { next: entries[entries.length - 1] } : {}) };
  }

  /** Whether `entry` (exactly this text) is on the whitelist. */
  has(kind: WhitelistKind, entry: string): boolean {
    const pending = this.overlay.get(entryKey(kind, entry));
    if (pending) return isPresent(pending.history);
    const row = this.statements.entry.get(kind, entry);
    return row !== undefined && isPresent(JSON.parse(row.history) as EntryHistory);
  }

  /** One page of the audit trail, newest first, read through an index. */
  auditPage(selection: AuditSelection): AuditResponse {
    this.materialize();
    const where: string[] = [];
    const params: Array<string | number> = [];
    const filter = (clause: string, ...values: Array<string | number>) => {
      where.push(clause);
      params.push(...values);
    };
    if (selection.kind !== undefined) filter('kind = ?', selection.kind);
    if (selection.entry !== undefined) filter('entry = ?', selection.entry);
    if (selection.tokenId !== undefined) filter('token_id = ?', selection.tokenId);
    // Normalised so that text order is time order (toISOString's fixed width).
    if (selection.since !== undefined) filter('applied_at >= ?', new Date(selection.since).toISOString());
    const { before } = selection;
    if (before !== undefined) filter('(seq < ? OR (seq = ? AND idx < ?))', before.seq, before.seq, before.index);
    const sql = `SELECT * FROM audit ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ` + 'ORDER BY seq DESC, idx DESC LIMIT ?';
    const rows = this.db.prepare<Array<string | number>, AuditRow>(sql).all(...params, selection.limit + 1);
    const records = rows.slice(0, selection.limit).map(toAuditRecord);
    const last = records.at(-1);
    return { records, ...(rows.length > selection.limit && last ? { next: `${last.seq}:${last.index}` } : {}) };
  }

  /**
   * Writes out what the log holds, copies the data file's WAL into it and syncs it; then the log
   * forgets every delivery the file now holds. On this thread, so only where an answer may wait
   * (close, tests); a running node checkpoints on its checkpoint thread and calls forgetThrough().
   */
  checkpoint(): void {
    if (!this.db.open) return;
    this.materialize();
    const durable = this.writer.checkpoint('TRUNCATE');
    if (durable !== undefined) {
      this.forgetThrough(durable);
      this.log.pragma('wal_checkpoint(TRUNCATE)');
    }
  }

  /**
   * Forgets the logged deliveries up to `seq`, which a checkpoint made durable in the data file.
   * This delete need not be durable itself: the next open replays only what comes after the
   * file's own `written` mark.
   */
  forgetThrough(seq: number): void {
    if (!this.log.open) return;
    this.statements.forgetDeliveries.run(seq);
  }

  /** Closes the database; later calls throw. */
  close(): void {
    if (!this.db.open) return;
    this.checkpoint();
    this.db.close();
    this.log.close();
  }
}
