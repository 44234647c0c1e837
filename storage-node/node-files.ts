import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';

/** The node's data file (SQLite, WAL mode): entries, their recent changes, the audit trail. */
export const DATABASE_FILE = 'whitelists.db';
/** The delivery log (SQLite, WAL, fsynced at each delivery): the deliveries the data file may not hold yet. */
export const DELIVERY_LOG_FILE = 'deliveries.db';

// An entry's row holds its presence (for lists, by index) and its recent changes (JSON, bounded by
// keptChanges). The audit trail has one row per delivered change, read by index and cursor, never whole.
export const DATA_FILE_SCHEMA = `
CREATE TABLE IF NOT EXISTS entries (
  kind TEXT NOT NULL,
  entry TEXT NOT NULL,
  present INTEGER NOT NULL,
  sort_key TEXT NOT NULL,
  history TEXT NOT NULL,
  PRIMARY KEY (kind, entry)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS entries_listed ON entries (kind, present, sort_key, entry);
CREATE INDEX IF NOT EXISTS entries_all ON entries (kind, sort_key, entry);
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
CREATE INDEX IF NOT EXISTS audit_by_change ON audit (position, batch_id, revert, idx);
`;

export const DELIVERY_LOG_SCHEMA = 'CREATE TABLE IF NOT EXISTS deliveries (seq INTEGER PRIMARY KEY, delivery TEXT NOT NULL);';

/** What an emptied WAL file is cut back to (bytes): the log's holds about a second of deliveries, the data file's more. */
const LOG_WAL_LIMIT_BYTES = 4 * 1024 * 1024;
const DATA_WAL_LIMIT_BYTES = 64 * 1024 * 1024;

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
