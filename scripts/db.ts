import { existsSync, renameSync, rmSync } from 'node:fs';
import { parseArgs } from 'node:util';
import SqliteDatabase from 'better-sqlite3';
import { Client, Connection } from '@temporalio/client';
import type { HDKey } from '@scure/bip32';
import { loadConfig, type Config } from '../config/config';
import { bip32DepositAddress, readDepositXpub } from '../lib/deposit-derivation';
import { temporalConnectionOptions } from '../config/temporal-connection';
import { openDatabase, openDatabaseAsIs, type DatabaseSettings } from '../db/database';
import { migrationStatus } from '../db/migrations';
import { DepositAddressStore } from '../db/deposit-addresses';
import { ExecutionStore } from '../db/execution-store';
import type { ExecutionRecord } from '../domain/execution-state';
import { EXECUTION_WORKFLOW_TYPE, getExecutionQuery } from '../contracts/temporal';

const USAGE = `usage: npm run --silent db -- migrate
       npm run --silent db -- status
       npm run --silent db -- backup FILE
       npm run --silent db -- repair [--wallet WALLET] [--query VISIBILITY_QUERY]

migrate  applies the read model's migrations (the API and the worker also do it at start-up)
status   prints the migrations this build has that the database lacks (pending) and those the
         database has that this build lacks (unknown: a newer build migrated it), changing
         nothing; exit 0 when the database is at this build's last migration, 1 otherwise
backup   copies a SQLite read model to FILE with SQLite's online backup, consistent while the
         API and the worker write to it; never over an existing file (exit 2). A PostgreSQL
         read model is backed up with pg_dump (docs/backup.md)
repair   re-projects executions from Temporal into the read model: every execution workflow
         Temporal still has (or those of one wallet, or those a visibility query selects) is
         queried and upserted, and its deposit address registered again if it is missing; a
         row is only replaced by a newer version, so it is safe to run at any time, beside
         running workers`;

export interface RepairResult {
  seen: number;
  written: number;
  failed: Array<{ workflowId: string; reason: string }>;
}

/**
 * Writes one execution's record back into the read model, and registers its deposit address
 * again (a read model restored from a backup lacks the addresses registered after it, and the
 * chain watcher sees no deposit to an address it does not hold). Whether the record was written.
 */
export async function restoreRecord(
  store: ExecutionStore,
  addresses: { store: DepositAddressStore; xpub: () => HDKey } | undefined,
  workflowId: string,
  record: ExecutionRecord,
): Promise<boolean> {
  const written = await store.upsert(workflowId, record);
  const target = record.depositTarget;
  if (addresses && target) {
    // The record names the address, not its derivation: the public key tells a new one from one issued before it.
    const bip32 = bip32DepositAddress(addresses.xpub(), target.chain, workflowId).toLowerCase() === target.address.toLowerCase();
    await addresses.store.register({
      chain: target.chain,
      address: target.address,
      workflowId,
      minAmount: target.minAmount,
      asset: target.asset,
      derivation: bip32 ? 'bip32-v1' : 'hmac-v0',
      ...(target.refundAddress === undefined ? {} : { refundAddress: target.refundAddress }),
    });
  }
  return written;
}

/** Re-projects the executions a visibility query selects (and registers their deposit addresses); returns what it did. */
export async function repairReadModel(
  client: Client,
  store: ExecutionStore,
  query: string,
  addresses?: { store: DepositAddressStore; xpub: () => HDKey },
): Promise<RepairResult> {
  const result: RepairResult = { seen: 0, written: 0, failed: [] };
  for await (const workflow of client.workflow.list({ query })) {
    result.seen++;
    try {
      const record = await client.workflow.getHandle(workflow.workflowId, workflow.runId).query(getExecutionQuery);
      if (await restoreRecord(store, addresses, workflow.workflowId, record)) result.written++;
    } catch (err) {
      result.failed.push({ workflowId: workflow.workflowId, reason: (err as Error).message });
    }
  }
  return result;
}

/**
 * `db backup FILE`: SQLite's online backup of the read model into FILE (through FILE.partial,
 * renamed once complete), page by page from a connection of its own, so the API and the worker
 * go on writing meanwhile; the copy is the database as of the backup's end. Returns the exit code.
 */
export async function backupReadModel(settings: DatabaseSettings, target: string | undefined): Promise<number> {
  if (!target) {
    console.error(USAGE);
    return 2;
  }
  if (settings.url) {
    console.error('the read model is PostgreSQL (DATABASE_URL): back it up with pg_dump (docs/backup.md)');
    return 2;
  }
  if (existsSync(target)) {
    console.error(`${target} exists: a backup never overwrites a file (name another one)`);
    return 2;
  }
  if (!existsSync(settings.sqliteFile)) {
    console.error(`no read model at ${settings.sqliteFile}`);
    return 2;
  }
  const partial = `${target}.partial`;
  rmSync(partial, { force: true });
  const source = new SqliteDatabase(settings.sqliteFile, { readonly: true, fileMustExist: true });
  try {
    source.pragma('busy_timeout = 5000');
    await source.backup(partial);
  } finally {
    source.close();
  }
  // The copy is one file: out of WAL mode, so no -wal or -shm file belongs to it.
  const copy = new SqliteDatabase(partial);
  copy.pragma('journal_mode = DELETE');
  const check = copy.pragma('integrity_check', { simple: true });
  copy.close();
  if (check !== 'ok') {
    console.error(`the copy of ${settings.sqliteFile} fails SQLite's integrity check: ${String(check)}`);
    return 1;
  }
  renameSync(partial, target);
  console.log(JSON.stringify({ database: settings.sqliteFile, backup: target, integrity: 'ok' }));
  return 0;
}

export function repairQuery(options: { wallet?: string; query?: string }): string {
  if (options.query) return options.query;
  const base = `WorkflowType='${EXECUTION_WORKFLOW_TYPE}'`;
  if (!options.wallet) return base;
  if (!/^[A-Za-z0-9._-]{1,128}$/.test(options.wallet)) throw new Error('--wallet is not a wallet id');
  return `${base} AND ExecutionWallet='${options.wallet}'`;
}

async function main(argv: string[]) {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { wallet: { type: 'string' }, query: { type: 'string' }, help: { type: 'boolean' } },
  });
  const command = positionals[0];
  if (values.help || !['migrate', 'repair', 'status', 'backup'].includes(command ?? '')) {
    console.error(USAGE);
    process.exit(values.help ? 0 : 2);
  }
  const config: Config = loadConfig();
  if (command === 'backup') {
    process.exitCode = await backupReadModel(config.database, positionals[1]);
    return;
  }
  if (command === 'status') {
    // Changing nothing includes not creating a SQLite file that is not there (a shell without the
    // host's settings would otherwise make and report on an empty data/read-model.sqlite).
    if (!config.database.url && !existsSync(config.database.sqliteFile)) {
      console.log(JSON.stringify({ database: config.database.sqliteFile, exists: false }));
      console.error(`db status: no SQLite read model at ${config.database.sqliteFile} (DATABASE_URL unset); \`db -- migrate\` creates it`);
      process.exitCode = 1;
      return;
    }
    const database = openDatabaseAsIs(config.database);
    try {
      const status = await migrationStatus(database.db, database.kind);
      console.log(JSON.stringify({ database: database.where, ...status }));
      if (status.pending.length > 0 || status.unknown.length > 0) process.exitCode = 1;
    } finally {
      await database.close();
    }
    return;
  }
  const database = await openDatabase(config.database);
  try {
    if (command === 'migrate') {
      console.log(`read model at ${database.where} is at the latest migration`);
      return;
    }
    const connection = await Connection.connect(temporalConnectionOptions(config, config.temporal.address ?? '127.0.0.1:7233'));
    try {
      const client = new Client({ connection, namespace: config.temporal.namespace });
      const result = await repairReadModel(client, new ExecutionStore(database), repairQuery(values), {
        store: new DepositAddressStore(database),
        // Read when a record with a deposit address comes: a failure is that record's (named, exit 1).
        xpub: () => readDepositXpub(config.depositXpubFile),
      });
      console.log(JSON.stringify({ database: database.where, ...result, failed: result.failed.length }));
      for (const f of result.failed) console.error(`${f.workflowId}: ${f.reason}`);
      if (result.failed.length > 0) process.exitCode = 1;
    } finally {
      await connection.close();
    }
  } finally {
    await database.close();
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((err) => {
    console.error('db:', (err as Error).message);
    process.exit(1);
  });
}
