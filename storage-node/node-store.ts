import fs from 'node:fs';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { fsyncDirectory } from '../lib/durable-fs';
import { applyChange, DEFAULT_KEPT_CHANGES, emptyHistory, isPresent, revertChange, type EntryHistory } from './entry-order';
import type { ApplyRequest, ApplyResponse, AuditRecord, AuditResponse, ListResponse, OpType, WhitelistKind } from './protocol';
import type { AuditSelection } from './validate';

/** The node's one data file (SQLite, WAL mode): entries, their recent changes, the audit trail. */
export const DATABASE_FILE = 'whitelists.db';

export interface NodeStoreOptions {
  dataDir: string;
  /** How many changes each entry keeps for ordering late deliveries and reverts (entry-order.ts). */
  keptChanges?: number;
}

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
CREATE INDEX IF NOT EXISTS audit_by_entry ON audit (entry, seq, idx);
CREATE INDEX IF NOT EXISTS audit_by_token ON audit (token_id, seq, idx);
CREATE INDEX IF NOT EXISTS audit_by_time ON audit (applied_at, seq, idx);
`;

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

  private constructor(
    private readonly db: SqliteDatabase.Database,
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
      page: db.prepare<[string, string, string, string, number], { entry: string }>(
        'SELECT entry FROM entries WHERE kind = ? AND present = 1 AND ' +
          '(sort_key > ? OR (sort_key = ? AND entry > ?)) ORDER BY sort_key, entry LIMIT ?',
      ),
    };
    this.seq = (db.prepare('SELECT max(seq) AS seq FROM audit').get() as { seq: number | null }).seq ?? 0;
  }

  /** Opens (creating if needed) the store in `dataDir`. */
  static open(options: NodeStoreOptions): NodeStore {
    if (!fs.existsSync(options.dataDir)) {
      fs.mkdirSync(options.dataDir, { recursive: true });
      // The new directory's own name must be durable too, or a power loss could lose it whole.
      fsyncDirectory(path.dirname(options.dataDir));
    }
    const db = new SqliteDatabase(path.join(options.dataDir, DATABASE_FILE));
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    // Checkpoints run from checkpoint() on a timer, not inside an apply: an automatic one copied
    // the WAL into the database and fsynced it in the middle of a request (the p90 of an apply of
    // 34 changes went from 8 to 16 ms with it).
    db.pragma('wal_autocheckpoint = 0');
    db.exec(SCHEMA);
    return new NodeStore(db, options.keptChanges ?? DEFAULT_KEPT_CHANGES);
  }

  /**
   * Delivers one node share (or its revert) in one transaction: each change takes its place in
   * its entry's order (entry-order.ts) and gets an audit row (a repeat of a delivery gets none). Throws when the database cannot be
   * written; nothing is applied then.
   */
  apply(request: ApplyRequest): ApplyResponse {
    return this.db.transaction(() => {
      const seq = this.seq + 1;
      const appliedAt = new Date().toISOString();
      const step = request.revert ? revertChange : applyChange;
      const key = (kind: string, entry: string) => `${kind}\n${entry}`;
      const keys = JSON.stringify(request.changes.map((c) => [c.kind, c.entry]));
      const histories = new Map<string, EntryHistory>();
      for (const row of this.statements.entries.all(keys)) histories.set(key(row.kind, row.entry), JSON.parse(row.history) as EntryHistory);
      const saved: Array<[string, string, number, string, string]> = [];
      const audited: Array<[number, string, string, string, number, number]> = [];
      const results = request.changes.map((change, index) => {
        const k = key(change.kind, change.entry);
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
      // The last write of an entry wins within the statement as it would one by one.
      if (saved.length > 0) this.statements.saveEntries.run(JSON.stringify(saved));
      if (audited.length > 0) {
        this.statements.audit.run(
          seq,
          request.batchId,
          request.position,
          request.revert ? 1 : 0,
          request.tokenId ?? null,
          appliedAt,
          JSON.stringify(audited),
        );
      }
      this.seq = seq;
      return { batchId: request.batchId, results };
    })();
  }

  /** One page of a whitelist: at most `limit` entries after `after` (compareEntries order). */
  listPage(kind: WhitelistKind, after: string | undefined, limit: number): ListResponse {
    const from = after ?? '';
    const rows = this.statements.page.all(kind, from.toLowerCase(), from.toLowerCase(), from, limit + 1);
    const entries = rows.slice(0, limit).map((r) => r.entry);
    return { kind, entries, ...(rows.length > limit ? { next: entries[entries.length - 1] } : {}) };
  }

  /** Whether `entry` (exactly this text) is on the whitelist. */
  has(kind: WhitelistKind, entry: string): boolean {
    const row = this.statements.entry.get(kind, entry);
    return row !== undefined && isPresent(JSON.parse(row.history) as EntryHistory);
  }

  /** One page of the audit trail, newest first, read through an index. */
  auditPage(selection: AuditSelection): AuditResponse {
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
   * Copies what the WAL holds into the database file, as far as no reader prevents it, and starts
   * the WAL over when it could copy everything: the WAL stays as small as the writes between two calls.
   */
  checkpoint(): void {
    if (this.db.open) this.db.pragma('wal_checkpoint(TRUNCATE)');
  }

  /** Closes the database; later calls throw. */
  close(): void {
    if (this.db.open) this.db.close();
  }
}
