import { mkdirSync } from 'node:fs';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import { Pool } from 'pg';
import { migrateToLatest } from './migrations';
import type { ReadModelTables } from './tables';

/** Which engine holds the read model: SQLite for one machine, PostgreSQL for a cluster. */
export type DatabaseKind = 'sqlite' | 'postgres';

export interface Database {
  readonly kind: DatabaseKind;
  readonly db: Kysely<ReadModelTables>;
  /** Where it is, for logs: the SQLite file, or the PostgreSQL host/database (never the password). */
  readonly where: string;
  /** The PostgreSQL pool (absent on SQLite): the API's shared rate-limit counters use it too. */
  readonly pool?: Pool;
  close(): Promise<void>;
}

export interface DatabaseSettings {
  /** A `postgres://` / `postgresql://` URL; unset: SQLite at `sqliteFile`. */
  readonly url?: string;
  readonly sqliteFile: string;
}

/** How often a PostgreSQL read model that did not answer at start is tried again. */
const RETRY_MS = 5_000;

/**
 * Opens the read model's database and brings its schema to the latest migration. Kysely speaks
 * both dialects with the same query code (docs/decisions/0050-read-model-kysely.md); SQLite runs
 * in WAL mode with a busy timeout, so the API and the worker processes can share the file.
 *
 * A PostgreSQL server that does not answer at start does not stop the caller: executions and
 * batches run on Temporal without it. The database is returned at once, its queries fail until the
 * server is back, and the migration is tried again every 5 s in the background (`onRetry` hears
 * each failure). A SQLite file that cannot be opened is a local fault and throws.
 */
export async function openDatabase(settings: DatabaseSettings, onRetry?: (err: Error) => void): Promise<Database> {
  const database = settings.url ? openPostgres(settings.url) : openSqlite(settings.sqliteFile);
  const migrate = () => migrateToLatest(database.db, database.kind);
  try {
    await migrate();
  } catch (err) {
    const failure = new Error(`read model at ${database.where}: migration failed: ${(err as Error).message}`, { cause: err });
    if (database.kind === 'sqlite' || !onRetry) {
      await database.close().catch(() => undefined);
      throw failure;
    }
    onRetry(failure);
    let timer: NodeJS.Timeout | undefined;
    const retry = () => {
      timer = setTimeout(() => {
        migrate().then(
          () => (timer = undefined),
          (again: Error) => {
            onRetry(again);
            retry();
          },
        );
      }, RETRY_MS);
      timer.unref();
    };
    retry();
    const close = database.close;
    return { ...database, close: () => (clearTimeout(timer), close()) };
  }
  return database;
}

/** Opens the read model's database as it is, without migrating it (`npm run db -- status`). */
export function openDatabaseAsIs(settings: DatabaseSettings): Database {
  return settings.url ? openPostgres(settings.url) : openSqlite(settings.sqliteFile);
}

function openSqlite(file: string): Database {
  mkdirSync(path.dirname(file), { recursive: true });
  const sqlite = new SqliteDatabase(file);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma('synchronous = NORMAL');
  const db = new Kysely<ReadModelTables>({ dialect: new SqliteDialect({ database: sqlite }) });
  return { kind: 'sqlite', db, where: file, close: () => db.destroy() };
}

function openPostgres(url: string): Database {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error('DATABASE_URL is not a URL');
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:')
    throw new Error(`DATABASE_URL must be postgres:// or postgresql://, got ${parsed.protocol}//`);
  // A short connect timeout: an unreachable database fails the caller's write (which is retried)
  // instead of hanging it. A small pool: every write is one statement.
  const pool = new Pool({
    connectionString: url,
    max: 5,
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
    statement_timeout: 10_000,
  });
  // An idle client whose server went away emits 'error' on the pool; without a listener that kills the process.
  pool.on('error', () => undefined);
  const db = new Kysely<ReadModelTables>({ dialect: new PostgresDialect({ pool }) });
  return { kind: 'postgres', db, pool, where: `postgres://${parsed.host}${parsed.pathname}`, close: () => db.destroy() };
}
