import type SqliteDatabase from 'better-sqlite3';
import { ReplayCache, type ReplayMemory } from '../lib/node-request-auth';
import { DELIVERY_LOG_FILE, openNodeFile } from './node-files';

// One row per accepted request id until its timestamp leaves the tolerance. In the delivery log's
// file, on a connection of its own that does not fsync (synchronous=NORMAL): an id is on disk
// before its request is applied, so it survives the process being killed at once; it survives a
// power loss with the next delivery's fsync of the same WAL file, so an applied delivery's id is
// never less durable than the delivery itself.
const SCHEMA = `
CREATE TABLE IF NOT EXISTS request_ids (
  id TEXT PRIMARY KEY,
  expires_ms INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS request_ids_by_expiry ON request_ids (expires_ms);
`;

/** Expired rows are deleted at most this often (ms): one indexed DELETE, not one per request. */
const SWEEP_INTERVAL_MS = 1000;

/**
 * The node's replay memory (lib/node-request-auth.ts ReplayMemory), kept across restarts: the
 * in-memory cache answers, the table keeps what it holds. Bounded by the cache's capacity; the
 * table holds no more than the cache plus a second of expired ids.
 */
export class RequestIdLog implements ReplayMemory {
  private readonly cache: ReplayCache;
  private readonly statements;
  private lastSweepMs = -Infinity;

  private constructor(
    private readonly db: SqliteDatabase.Database,
    capacity: number,
    nowMs: number,
  ) {
    this.cache = new ReplayCache(capacity);
    this.statements = {
      insert: db.prepare<[string, number]>('INSERT OR REPLACE INTO request_ids (id, expires_ms) VALUES (?, ?)'),
      sweep: db.prepare<[number]>('DELETE FROM request_ids WHERE expires_ms < ?'),
    };
    this.sweep(nowMs);
    // Oldest expiry first, the order the cache forgets in.
    const live = db.prepare<[], { id: string; expires_ms: number }>('SELECT id, expires_ms FROM request_ids ORDER BY expires_ms');
    for (const row of live.iterate()) this.cache.restore(row.id, row.expires_ms);
  }

  /** Opens the table in `dataDir` (which the node's store created) and loads the ids still live at `nowMs`. */
  static open(dataDir: string, capacity: number, nowMs = Date.now()): RequestIdLog {
    const db = openNodeFile(dataDir, DELIVERY_LOG_FILE, 'NORMAL');
    db.exec(SCHEMA);
    return new RequestIdLog(db, capacity, nowMs);
  }

  get size(): number {
    return this.cache.size;
  }

  remember(id: string, expiresAtMs: number, nowMs: number): 'new' | 'seen' | 'full' {
    const outcome = this.cache.remember(id, expiresAtMs, nowMs);
    if (outcome !== 'new') return outcome;
    try {
      this.statements.insert.run(id, expiresAtMs);
    } catch (err) {
      // Not recorded, so not remembered: the request is refused (500) and may come again.
      this.cache.forget(id);
      throw err;
    }
    if (nowMs - this.lastSweepMs >= SWEEP_INTERVAL_MS) this.sweep(nowMs);
    return 'new';
  }

  private sweep(nowMs: number): void {
    this.lastSweepMs = nowMs;
    // lib/node-request-auth.ts isExpired, in SQL: strictly before now.
    this.statements.sweep.run(nowMs);
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
