import fs from 'node:fs';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { fsyncDirectory } from '../lib/durable-fs';
import { applyChange, DEFAULT_KEPT_CHANGES, emptyHistory, isPresent, revertChange, type EntryHistory } from './entry-order';
import type { ApplyRequest, ApplyResponse, AuditRecord, AuditResponse, ListResponse, OpType, WhitelistKind } from './protocol';
import type { AuditSelection } from './validate';

/** The node's data file (SQLite, WAL mode): entries, their recent changes, the audit trail. */
export const DATABASE_FILE = 'whitelists.db';
/** The delivery log (SQLite, WAL, fsynced at each delivery): what deliveries wrote and the data file may not hold yet. */
export const DELIVERY_LOG_FILE = 'deliveries.db';

export interface NodeStoreOptions {
  dataDir: string;
  /** How many changes each entry keeps for ordering late deliveries and reverts (entry-order.ts). */
  keptChanges?: number;
}

interface EntryRow {
  history: string;
}

const entryKey = (kind: string, entry: string) => `${kind}\n${entry}`;

/** An entry row to write: kind, entry, present, sort key, history (JSON). */
type SavedEntry = [string, string, number, string, string];
/** An audit row to write: index, op_type, kind, entry, changed, superseded. */
type AuditedChange = [number, string, string, string, number, number];
/** What one delivery writes, as its log row holds it until materialize() writes it out. */
interface DeliveryWrites {
  saved: SavedEntry[];
  audit: { batchId: string; position: number; revert: number; tokenId: string | null; appliedAt: string; rows: AuditedChange[] };
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

const LOG_SCHEMA = 'CREATE TABLE IF NOT EXISTS deliveries (seq INTEGER PRIMARY KEY, writes TEXT NOT NULL);';

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
 * The durable whitelists of one node in one SQLite file. An apply is one transaction, committed
 * (synchronous=FULL: fsynced) before it is answered, so an acknowledged change survives a crash
 * or power loss; opening the file replays nothing, whatever the size of the audit trail.
 */
export class NodeStore {
  private readonly keptChanges: number;
  private seq: number;
  private readonly statements;
  /** Entries' histories changed by deliveries not yet written out (materialize()). */
  private readonly overlay = new Map<string, EntryHistory>();
  /** Logged deliveries not yet written out to the data file, oldest first. */
  private readonly pending: Array<{ seq: number; writes: DeliveryWrites }> = [];
  /** The newest delivery the data file holds (its meta row `written`). */
  private written: number;
  private scheduled = false;

  private constructor(
    private readonly db: SqliteDatabase.Database,
    private readonly log: SqliteDatabase.Database,
    keptChanges: number,
  ) {
    this.keptChanges = keptChanges;
    // A share's changes are read and written with one statement each (rows passed as JSON), so a
    // delivery of N changes costs three statements, not 3N.
    this.statements = {
      entry: db.prepare<[string, string], EntryRow>('SELECT history FROM entries WHERE kind = ? AND entry = ?'),
      entries: db.prepare<[string], EntryKeyRow>(
        "SELECT kind, entry, history FROM entries WHERE (kind, entry) IN (SELECT value ->> '$[0]', value ->> '$[1]' FROM json_each(?))",
      ),
      saveEntries: db.prepare<[string]>(
        'INSERT INTO entries (kind, entry, present, sort_key, history) ' +
          "SELECT value ->> '$[0]', value ->> '$[1]', value ->> '$[2]', value ->> '$[3]', value ->> '$[4]' FROM json_each(?) WHERE true " +
          'ON CONFLICT (kind, entry) DO UPDATE SET present = excluded.present, history = excluded.history',
      ),
      audit: db.prepare<[number, string, number, number, string | null, string, string]>(
        'INSERT INTO audit (seq, idx, batch_id, position, revert, op_type, kind, entry, changed, superseded, token_id, applied_at) ' +
          "SELECT ?, value ->> '$[0]', ?, ?, ?, value ->> '$[1]', value ->> '$[2]', value ->> '$[3]', value ->> '$[4]', value ->> '$[5]', ?, ? " +
          'FROM json_each(?)',
      ),
      logDelivery: log.prepare<[number, string]>('INSERT INTO deliveries (seq, writes) VALUES (?, ?)'),
      loggedAfter: log.prepare<[number], { seq: number; writes: string }>('SELECT seq, writes FROM deliveries WHERE seq > ? ORDER BY seq'),
      forgetDeliveries: log.prepare<[number]>('DELETE FROM deliveries WHERE seq <= ?'),
      written: db.prepare<[], number>("SELECT value FROM meta WHERE key = 'written'").pluck(),
      setWritten: db.prepare<[number]>(
        "INSERT INTO meta (key, value) VALUES ('written', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
      ),
      page: db.prepare<[string, string, string, string, number], { entry: string }>(
        'SELECT entry FROM entries WHERE kind = ? AND present = 1 AND ' +
          '(sort_key > ? OR (sort_key = ? AND entry > ?)) ORDER BY sort_key, entry LIMIT ?',
      ),
    };
    this.written = (this.statements.written.get() as number | undefined) ?? 0;
    const maxSeq = (d: SqliteDatabase.Database, table: string) =>
      (d.prepare(`SELECT max(seq) FROM ${table}`).pluck().get() as number | null) ?? 0;
    this.seq = Math.max(maxSeq(db, 'audit'), maxSeq(log, 'deliveries'));
    // Deliveries acknowledged before a crash or power loss but not in the data file: written out now.
    for (const row of this.statements.loggedAfter.all(this.written))
      this.pending.push({ seq: row.seq, writes: JSON.parse(row.writes) as DeliveryWrites });
    this.materialize();
  }

  /** Opens (creating if needed) the store in `dataDir`. */
  static open(options: NodeStoreOptions): NodeStore {
    if (!fs.existsSync(options.dataDir)) {
      fs.mkdirSync(options.dataDir, { recursive: true });
      // The new directory's own name must be durable too, or a power loss could lose it whole.
      fsyncDirectory(path.dirname(options.dataDir));
    }
    // The delivery log is fsynced at each delivery and holds a few rows; the data file is synced
    // only by checkpoints (synchronous=NORMAL in WAL mode), which run from checkpoint() on a
    // timer, never inside an apply, and after which the log forgets what the file holds.
    const log = new SqliteDatabase(path.join(options.dataDir, DELIVERY_LOG_FILE));
    log.pragma('journal_mode = WAL');
    log.pragma('synchronous = FULL');
    log.exec(LOG_SCHEMA);
    const db = new SqliteDatabase(path.join(options.dataDir, DATABASE_FILE));
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('wal_autocheckpoint = 0');
    db.exec(SCHEMA);
    return new NodeStore(db, log, options.keptChanges ?? DEFAULT_KEPT_CHANGES);
  }

  /**
   * Delivers one node share (or its revert): each change takes its place in its entry's order
   * (entry-order.ts) and gets an audit row (a repeat of a delivery gets none). What the delivery
   * writes is committed as one row of the delivery log (synchronous=FULL: fsynced) before it is
   * answered; the entries and audit rows it implies are written out right after the answer
   * (materialize), in their own transaction, and again at the next open if the process died first.
   * Throws when the database cannot be written; nothing is applied then.
   */
  apply(request: ApplyRequest): ApplyResponse {
    const seq = this.seq + 1;
    const appliedAt = new Date().toISOString();
    const step = request.revert ? revertChange : applyChange;
    // Each entry's history: from a delivery not yet written out, else from the data file.
    const histories = new Map<string, EntryHistory>();
    const unread: Array<[string, string]> = [];
    for (const { kind, entry } of request.changes) {
      const pending = this.overlay.get(entryKey(kind, entry));
      if (pending) histories.set(entryKey(kind, entry), pending);
      else unread.push([kind, entry]);
    }
    if (unread.length > 0)
      for (const row of this.statements.entries.all(JSON.stringify(unread)))
        histories.set(entryKey(row.kind, row.entry), JSON.parse(row.history) as EntryHistory);
    const saved: SavedEntry[] = [];
    const audited: AuditedChange[] = [];
    const results = request.changes.map((change, index) => {
      const k = entryKey(change.kind, change.entry);
      const before = histories.get(k) ?? emptyHistory();
      const order = { position: request.position, batchId: request.batchId, index };
      const { history, verdict, repeat } = step(before, order, change.op_type, this.keptChanges);
      if (history !== before) {
        // A later change to the same entry in this delivery sees this one.
        histories.set(k, history);
        saved.push([change.kind, change.entry, isPresent(history) ? 1 : 0, change.entry.toLowerCase(), JSON.stringify(history)]);
      }
      // A repeat did nothing new: the trail already holds its first delivery.
      if (!repeat) audited.push([index, change.op_type, change.kind, change.entry, verdict.changed ? 1 : 0, verdict.superseded ? 1 : 0]);
      return { ...change, ...verdict };
    });
    const writes: DeliveryWrites = {
      saved,
      audit: {
        batchId: request.batchId,
        position: request.position,
        revert: request.revert ? 1 : 0,
        tokenId: request.tokenId ?? null,
        appliedAt,
        rows: audited,
      },
    };
    this.statements.logDelivery.run(seq, JSON.stringify(writes));
    this.seq = seq;
    for (const [kind, entry] of saved) this.overlay.set(entryKey(kind, entry), histories.get(entryKey(kind, entry))!);
    this.pending.push({ seq, writes });
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        if (this.db.open) this.materialize();
      });
    }
    return { batchId: request.batchId, results };
  }

  /**
   * Writes every logged delivery's entries and audit rows into the data file, with the newest
   * delivery it holds, in one transaction. Not fsynced: were it lost, the log still holds those
   * deliveries (it forgets them only after a checkpoint) and the next open writes them again.
   * Reads call it first, so they see every acknowledged delivery.
   */
  materialize(): void {
    if (this.pending.length === 0) return;
    const last = this.pending[this.pending.length - 1].seq;
    this.db.transaction(() => {
      for (const { seq, writes } of this.pending) {
        const { saved, audit } = writes;
        // The last write of an entry wins within the statement as it would one by one.
        if (saved.length > 0) this.statements.saveEntries.run(JSON.stringify(saved));
        if (audit.rows.length > 0)
          this.statements.audit.run(
            seq,
            audit.batchId,
            audit.position,
            audit.revert,
            audit.tokenId,
            audit.appliedAt,
            JSON.stringify(audit.rows),
          );
      }
      this.statements.setWritten.run(last);
    })();
    this.written = last;
    this.pending.length = 0;
    this.overlay.clear();
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
    this.materialize();
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
   * forgets every delivery the file now holds. Both WALs start over, so they stay as small as the
   * writes between two calls.
   */
  checkpoint(): void {
    if (!this.db.open) return;
    this.materialize();
    const [{ busy, log: walFrames, checkpointed }] = this.db.pragma('wal_checkpoint(TRUNCATE)') as Array<{
      busy: number;
      log: number;
      checkpointed: number;
    }>;
    // Only once the file holds them durably may the log forget them.
    if (busy === 0 && checkpointed === walFrames) {
      this.statements.forgetDeliveries.run(this.written);
      this.log.pragma('wal_checkpoint(TRUNCATE)');
    }
  }

  /** Closes the database; later calls throw. */
  close(): void {
    if (!this.db.open) return;
    this.checkpoint();
    this.db.close();
    this.log.close();
  }
}
