import assert from 'node:assert/strict';
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdtempSync, rmSync, statSync, unlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { childEnv } from '../../config/child-env';
import { openDatabase, openDatabaseAsIs, type DatabaseSettings } from '../../db/database';
import { DepositAddressStore } from '../../db/deposit-addresses';
import { migrationStatus } from '../../db/migrations';
import { bip32DepositAddress, depositXpub, parseDepositXpub } from '../../lib/deposit-derivation';
import { createDepositSeedFile, depositAddress, readDepositSeed } from '../../lib/deposit-seed';
import { backupReadModel, restoreRecord } from '../../scripts/db';
import { ExecutionStore } from '../../db/execution-store';
import { preparedRecord } from '../support/records';
import { seedCommand } from '../../scripts/seed';
import { postgresBinDir, startThrowawayPostgres, type ThrowawayPostgres } from '../support/postgres';

const CHAIN = 'evm:31337';

/**
 * A process that registers deposit addresses `w1`, `w2`, … one a transaction, as the API does at
 * prepare, until it is stopped: the service writing while it is backed up.
 */
function startWriter(settings: DatabaseSettings): ChildProcess {
  const store = path.join(__dirname, '..', '..', 'db', 'deposit-addresses.js');
  const database = path.join(__dirname, '..', '..', 'db', 'database.js');
  const script = `
    const { openDatabase } = require(${JSON.stringify(database)});
    const { DepositAddressStore } = require(${JSON.stringify(store)});
    (async () => {
      const db = await openDatabase(${JSON.stringify(settings)});
      const store = new DepositAddressStore(db);
      for (let n = 1; ; n++) {
        await store.register({ chain: ${JSON.stringify(CHAIN)}, address: '0x' + n.toString(16).padStart(40, '0'), workflowId: 'w' + n, minAmount: '1' });
        if (n === 50) process.stdout.write('writing\\n');
      }
    })();`;
  return spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
}

const writing = (child: ChildProcess) =>
  new Promise<void>((resolve, reject) => {
    child.stdout!.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`the writer exited (${code})`)));
  });

/** The workflow numbers a restored read model holds, sorted: a consistent copy holds 1..k, no gap. */
async function registered(settings: DatabaseSettings): Promise<number[]> {
  const database = await openDatabase(settings);
  try {
    const status = await migrationStatus(database.db, database.kind);
    assert.deepEqual([status.pending, status.unknown], [[], []], "the restored read model is at this build's last migration");
    return (await new DepositAddressStore(database).workflowIds(CHAIN)).map((id) => Number(id.slice(1))).sort((a, b) => a - b);
  } finally {
    await database.close();
  }
}

const aPrefix = (ns: number[]) => ns.length > 0 && ns.every((n, i) => n === i + 1);

describe('backup and restore (docs/backup.md): the commands the page gives, against real databases', function () {
  this.timeout(120_000);
  let tmp: string;
  let writer: ChildProcess | undefined;

  beforeEach(() => (tmp = mkdtempSync(path.join(os.tmpdir(), 'intent-service-backup-'))));
  afterEach(async () => {
    if (writer && writer.exitCode === null && writer.signalCode === null) {
      writer.kill('SIGKILL');
      await new Promise((resolve) => writer!.once('exit', resolve));
    }
    writer = undefined;
    rmSync(tmp, { recursive: true, force: true });
  });

  it('when a SQLite read model is backed up (npm run db -- backup) while a process writes to it, then the copy restored elsewhere is whole, migrated and holds every write up to one point', async () => {
    const live = { sqliteFile: path.join(tmp, 'data', 'read-model.sqlite') };
    await (await openDatabase(live)).close();
    writer = startWriter(live);
    await writing(writer);
    const backup = path.join(tmp, 'backup.sqlite');
    assert.equal(await backupReadModel(live, backup), 0);
    assert.ok(!existsSync(`${backup}-wal`) && !existsSync(`${backup}.partial`), 'the backup is one file');
    assert.equal(await backupReadModel(live, backup), 2, 'a second backup to the same name is refused');
    writer.kill('SIGKILL');

    // Restore: the service stopped, the file put in place with no -wal or -shm beside it.
    const restored = { sqliteFile: path.join(tmp, 'restored', 'read-model.sqlite') };
    execFileSync('install', ['-D', '-m', '600', backup, restored.sqliteFile]);
    const kept = await registered(restored);
    assert.ok(aPrefix(kept) && kept.length >= 50, `the copy holds w1..w${kept.length} without a gap`);
    const after = await registered(live);
    assert.ok(after.length >= kept.length, 'writes went on during the backup');
  });

  it('when a database is migrated by a newer build, then npm run db -- status names the migration it does not know and exits 1', async () => {
    const live = { sqliteFile: path.join(tmp, 'read-model.sqlite') };
    await (await openDatabase(live)).close();
    const database = openDatabaseAsIs(live);
    try {
      assert.deepEqual(await migrationStatus(database.db, database.kind), {
        pending: [],
        unknown: [],
        last: (await migrationStatus(database.db, database.kind)).last,
      });
      await database.db
        .insertInto('kysely_migration' as never)
        .values({ name: '9999-from-a-newer-build', timestamp: new Date().toISOString() } as never)
        .execute();
      assert.deepEqual((await migrationStatus(database.db, database.kind)).unknown, ['9999-from-a-newer-build']);
    } finally {
      await database.close();
    }
    const fresh = openDatabaseAsIs({ sqliteFile: path.join(tmp, 'never-migrated.sqlite') });
    try {
      assert.ok((await migrationStatus(fresh.db, fresh.kind)).pending.length > 10, 'a database never migrated lacks every migration');
    } finally {
      await fresh.close();
    }
  });

  it('when npm run db -- status is pointed at a SQLite file that is not there, then it says so and exits 1, and creates nothing', () => {
    const missing = path.join(tmp, 'not-here', 'read-model.sqlite');
    const script = path.join(__dirname, '..', '..', 'scripts', 'db.js');
    let failed: { status: number; stdout: string } | undefined;
    try {
      execFileSync(process.execPath, [script, 'status'], {
        env: childEnv({ DATABASE_URL: undefined, DATABASE_FILE: missing }),
        encoding: 'utf8',
        stdio: 'pipe',
      });
    } catch (err) {
      failed = err as { status: number; stdout: string };
    }
    assert.equal(failed?.status, 1);
    assert.deepEqual(JSON.parse(failed!.stdout), { database: missing, exists: false });
    assert.equal(existsSync(path.dirname(missing)), false, 'no folder, no file');
  });

  it('when a restored read model lacks an execution and its deposit address (registered after the backup), then the repair of its record registers the address again, and again is harmless', async () => {
    const restored = { sqliteFile: path.join(tmp, 'restored.sqlite') };
    const database = await openDatabase(restored);
    try {
      const address = '0x' + 'ab'.repeat(20);
      const workflowId = 'exec:w:after-the-backup';
      const record = preparedRecord('after-the-backup', {
        chain: CHAIN,
        asset: 'native',
        minAmount: '5',
        address,
        refundAddress: '0x' + 'cd'.repeat(20),
      });
      const [store, addresses] = [new ExecutionStore(database), new DepositAddressStore(database)];
      const xpub = parseDepositXpub(depositXpub(new Uint8Array(32).fill(7)));
      const restoring = { store: addresses, xpub: () => xpub };
      assert.equal(await addresses.isDepositAddress(address), false);
      assert.equal(await restoreRecord(store, restoring, workflowId, record), true);
      assert.deepEqual(await addresses.workflowIds(CHAIN), [workflowId]);
      // Not the public key's child: an address issued before public derivation.
      assert.deepEqual(await addresses.addressOf(CHAIN, workflowId), { address, derivation: 'hmac-v0' });
      const newer = 'exec:w:bip32-after-the-backup';
      const derived = bip32DepositAddress(xpub, CHAIN, newer);
      const newRecord = preparedRecord('bip32-after-the-backup', { chain: CHAIN, asset: 'native', minAmount: '5', address: derived });
      assert.equal(await restoreRecord(store, restoring, newer, newRecord), true);
      assert.deepEqual(await addresses.addressOf(CHAIN, newer), { address: derived.toLowerCase(), derivation: 'bip32-v1' });
      assert.deepEqual(await addresses.register({ chain: CHAIN, address, workflowId, minAmount: '5' }), {
        refundAddress: '0x' + 'cd'.repeat(20),
      });
      assert.equal(await restoreRecord(store, restoring, workflowId, record), false, 'the record is there already');
      assert.deepEqual((await addresses.workflowIds(CHAIN)).sort(), [newer, workflowId].sort());
    } finally {
      await database.close();
    }
  });

  describe('a PostgreSQL read model (a throwaway server)', () => {
    let pg: ThrowawayPostgres | undefined;
    before(async function () {
      if (!postgresBinDir()) {
        console.warn('    PostgreSQL server binaries are not installed (pg_config --bindir): the pg_dump test is skipped');
        this.skip();
      }
      pg = await startThrowawayPostgres('read_model');
    });
    after(async () => pg?.stop());

    it('when it is dumped with pg_dump while a process writes and restored with pg_restore into a fresh database, then the restore is migrated and holds every write up to one point', async () => {
      const live = { url: pg!.url, sqliteFile: path.join(tmp, 'unused.sqlite') };
      await (await openDatabase(live)).close();
      writer = startWriter(live);
      await writing(writer);
      const dump = path.join(tmp, 'read-model.dump');
      execFileSync('pg_dump', ['--format=custom', '--file', dump, pg!.url]);
      writer.kill('SIGKILL');
      const server = new URL(pg!.url);
      const fresh = `${server.protocol}//${server.username}@${server.host}/read_model_restored`;
      execFileSync('createdb', ['-h', server.hostname, '-p', server.port, '-U', server.username, 'read_model_restored']);
      execFileSync('pg_restore', ['--no-owner', '--dbname', fresh, dump]);
      const kept = await registered({ url: fresh, sqliteFile: live.sqliteFile });
      assert.ok(aPrefix(kept) && kept.length >= 50, `the restore holds w1..w${kept.length} without a gap`);
    });
  });

  it('when the deposit seed is lost and its backup put back (install -m 600), then verify exits 0 and the restored seed derives every registered address', async () => {
    const seedFile = path.join(tmp, 'data', 'deposit-seed');
    createDepositSeedFile(seedFile);
    const seed = readDepositSeed(seedFile);
    const readModel = { sqliteFile: path.join(tmp, 'data', 'read-model.sqlite') };
    const database = await openDatabase(readModel);
    const store = new DepositAddressStore(database);
    for (let n = 1; n <= 5; n++)
      await store.register({
        chain: CHAIN,
        address: depositAddress(seed, CHAIN, `exec:w:${n}`, 'bip32-v1'),
        workflowId: `exec:w:${n}`,
        minAmount: '1',
      });
    await database.close();
    const backup = path.join(tmp, 'offline', 'deposit-seed');
    assert.equal((await seedCommand(['backup', backup], { seedFile })).code, 0);

    unlinkSync(seedFile);
    execFileSync('install', ['-m', '600', backup, seedFile]);
    assert.equal(statSync(seedFile).mode & 0o777, 0o600);
    const checked = await seedCommand(['verify', backup, '--addresses', '1000'], { seedFile, readModel: () => openDatabase(readModel) });
    assert.equal(checked.code, 0, [...checked.out, ...checked.err].join('\n'));
    assert.match(checked.out.join('\n'), /deposit addresses checked: 5, matching: 5/);

    // A seed put back wrong (another one) is caught before any process starts.
    chmodSync(seedFile, 0o600);
    copyFileSync(backup, path.join(tmp, 'kept'));
    createDepositSeedFile(path.join(tmp, 'other-seed'));
    execFileSync('install', ['-m', '600', path.join(tmp, 'other-seed'), seedFile]);
    const wrong = await seedCommand(['verify', path.join(tmp, 'kept'), '--addresses', '1000'], {
      seedFile,
      readModel: () => openDatabase(readModel),
    });
    assert.equal(wrong.code, 1);
  });
});
