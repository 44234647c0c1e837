import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Migrator, type Kysely } from 'kysely';
import { openDatabase, type Database } from '../../db/database';
import { ExecutionStore } from '../../db/execution-store';
import { migrations } from '../../db/migrations';
import { RefundLedger, type RefundDue } from '../../db/refund-ledger';
import { refundsOfRecord } from '../../db/refund-rows';
import { applyCancel, applyDeposit, recordVersion, type Deposit, type ExecutionRecord } from '../../domain/execution-state';
import { executionWorkflowId } from '../../contracts/temporal';
import { depositEntries } from '../../api/deposits/routes';
import { postgresBinDir, startThrowawayPostgres, type ThrowawayPostgres } from '../support/postgres';
import { walletRecords } from '../support/records';

const CHAIN = 'evm:31337';
const tx = (n: number) => `0x${n.toString(16).padStart(64, 'a')}`;

/** The deposit lookup's queries on both engines of the read model: SQLite (npm start) and PostgreSQL (DATABASE_URL). */
for (const kind of ['sqlite', 'postgres'] as const) {
  describe(`db: the deposit lookup on ${kind === 'sqlite' ? 'SQLite' : 'PostgreSQL (a throwaway server)'}`, function () {
    this.timeout(60_000);
    let tmp: string;
    let pg: ThrowawayPostgres | undefined;
    let database: Database;
    let store: ExecutionStore;
    let ledger: RefundLedger;

    before(async function () {
      tmp = mkdtempSync(path.join(os.tmpdir(), 'intent-service-lookup-'));
      let settings: { url?: string; sqliteFile: string } = { sqliteFile: path.join(tmp, 'read-model.sqlite') };
      if (kind === 'postgres') {
        if (!postgresBinDir()) {
          console.warn('    PostgreSQL server binaries are not installed (pg_config --bindir): the PostgreSQL lookup tests are skipped');
          this.skip();
        }
        pg = await startThrowawayPostgres();
        settings = { ...settings, url: pg.url };
      }
      database = await openDatabase(settings);
      store = new ExecutionStore(database);
      ledger = new RefundLedger(database);
    });
    after(async () => {
      await database?.close();
      await pg?.stop();
      if (tmp) rmSync(tmp, { recursive: true, force: true });
    });

    /** A record of `wallet` that took `deposit` (OPERATION_PENDING), written to the store. */
    async function taken(wallet: string, deposit: Deposit): Promise<{ id: string; record: ExecutionRecord }> {
      const [prepared] = walletRecords(wallet, 1);
      const record = applyDeposit(prepared, deposit, '2026-01-01T00:00:01.000Z').record;
      const id = executionWorkflowId(record.wallet, record.executionId);
      await store.upsert(id, record);
      return { id, record };
    }

    const due = (n: number, over: Partial<RefundDue> = {}): RefundDue => ({
      workflowId: `exec:lookup-w${n}:e${n}`,
      wallet: `lookup-w${n}`,
      executionId: `e${n}`,
      chain: CHAIN,
      txHash: tx(1000),
      transferIndex: n,
      amount: String(1000 + n),
      asset: 'native',
      reason: 'other-tx',
      reportedBy: 'chain-watcher',
      ...over,
    });

    it("when a record takes a deposit, then it is found by the deposit's txHash in any case on its chain only; a record without one, or of another transaction, is not", async () => {
      const hash = tx(1);
      const a = await taken('lookup-taken', { txHash: hash, chain: CHAIN, transferIndex: 0, asset: 'native', amount: '5000' });
      await taken('lookup-other-tx', { txHash: tx(2), chain: CHAIN, amount: '5000' });
      const [prepared] = walletRecords('lookup-none', 1);
      await store.upsert(executionWorkflowId(prepared.wallet, prepared.executionId), prepared);

      for (const spelling of [hash, hash.toUpperCase().replace('0X', '0x')]) {
        const found = await store.byDepositTx(CHAIN, spelling);
        assert.deepEqual([...found.keys()], [a.id]);
        assert.deepEqual(found.get(a.id), a.record);
      }
      assert.equal((await store.byDepositTx('evm:1', hash)).size, 0, 'another chain');
      assert.equal((await store.byDepositTx(CHAIN, tx(3))).size, 0, 'another transaction');
    });

    it('when a record reported with an upper-case txHash is rewritten by a newer version (a cancel), then it is still found by the lowercase hash, and an older version arriving late changes nothing', async () => {
      const hash = tx(4).toUpperCase().replace('0X', '0x');
      const a = await taken('lookup-upper', { txHash: hash, chain: CHAIN, amount: '7000' });
      const cancelled = applyCancel(a.record, '2026-01-01T00:00:02.000Z');
      assert.equal(await store.upsert(a.id, cancelled), true);
      assert.equal(await store.upsert(a.id, a.record), false);
      const found = await store.byDepositTx(CHAIN, tx(4));
      assert.equal(recordVersion(found.get(a.id)!), recordVersion(cancelled));
      assert.equal(found.get(a.id)!.status, 'CANCELLED');
    });

    it("when one transaction's transfers are rows of several executions (one stored in upper case), then ofTransaction answers each, by transfer index, on that chain only", async () => {
      const ids = [
        await ledger.recordDue(due(2)),
        await ledger.recordDue(due(1, { txHash: tx(1000).toUpperCase().replace('0X', '0x'), asset: 'erc20:0x' + '12'.repeat(20) })),
      ];
      await ledger.recordDue(due(3, { chain: 'evm:1' }));
      await ledger.recordDue(due(4, { txHash: tx(1001) }));
      const rows = await ledger.ofTransaction(CHAIN, tx(1000).toUpperCase().replace('0X', '0x'));
      assert.deepEqual(
        rows.map((r) => [r.id, r.transferIndex, r.executionId]),
        [
          [ids[1], 1, 'e1'],
          [ids[0], 2, 'e2'],
        ],
      );
      assert.deepEqual(await ledger.ofTransaction('evm:1', tx(1001)), []);
    });

    it('when a deposit was taken and owed back after a cancel, and a second transfer of the same transaction is owed, then the lookup answers each transfer once: owed with its refund, never the record beyond its status', async () => {
      const hash = tx(5);
      const a = await taken('lookup-cancel', { txHash: hash, chain: CHAIN, transferIndex: 0, asset: 'native', amount: '9000' });
      const cancelled = applyCancel(a.record, '2026-01-01T00:00:02.000Z');
      for (const row of refundsOfRecord(a.id, cancelled, [])) await ledger.recordDue(row);
      await store.upsert(a.id, cancelled);
      const b = await taken('lookup-second', { txHash: hash, chain: CHAIN, transferIndex: 1, asset: 'native', amount: '3000' });
      await ledger.recordDue(
        due(9, { txHash: hash, transferIndex: 2, wallet: b.record.wallet, executionId: b.record.executionId, workflowId: b.id }),
      );

      const [rows, takenRecords] = await Promise.all([ledger.ofTransaction(CHAIN, hash), store.byDepositTx(CHAIN, hash)]);
      const entries = depositEntries(CHAIN, hash, rows, takenRecords, takenRecords);
      assert.deepEqual(
        entries.map((e) => [e.transferIndex, e.executionId, e.status, e.outcome, e.refund?.state, e.refund?.reason]),
        [
          [0, a.record.executionId, 'CANCELLED', 'owed', 'due', 'cancelled-after-deposit'],
          [1, b.record.executionId, 'OPERATION_PENDING', 'taken', undefined, undefined],
          [2, b.record.executionId, 'OPERATION_PENDING', 'owed', 'due', 'other-tx'],
        ],
      );
      for (const e of entries)
        assert.deepEqual(
          Object.keys(e).filter(
            (k) =>
              !['chain', 'txHash', 'transferIndex', 'asset', 'amount', 'wallet', 'executionId', 'status', 'outcome', 'refund'].includes(k),
          ),
          [],
        );
    });

    it('when the lookup migration runs on a read model holding records written before it, then their deposits are found too', async () => {
      const db = database.db as unknown as Kysely<any>;
      const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations(kind) } });
      const names = Object.keys(migrations(kind));
      const before = names[names.indexOf('0016-deposit-lookup') - 1]!;
      const down = await migrator.migrateTo(before);
      assert.equal(down.error, undefined, String(down.error));
      const [prepared] = walletRecords('lookup-old', 1);
      const old = applyDeposit(
        prepared,
        { txHash: tx(6).toUpperCase().replace('0X', '0x'), chain: CHAIN, amount: '1' },
        '2026-01-01T00:00:01.000Z',
      ).record;
      const id = executionWorkflowId(old.wallet, old.executionId);
      await db
        .insertInto('executions')
        .values({
          workflow_id: id,
          wallet: old.wallet,
          execution_id: old.executionId,
          status: old.status,
          version: recordVersion(old),
          created_at: old.createdAt,
          updated_at: old.updatedAt,
          record: JSON.stringify(old),
          projected_at: old.updatedAt,
        })
        .execute();
      const up = await migrator.migrateToLatest();
      assert.equal(up.error, undefined, String(up.error));
      assert.deepEqual([...(await store.byDepositTx(CHAIN, tx(6))).keys()], [id]);
      assert.deepEqual([...(await store.byDepositTx(CHAIN, tx(1))).keys()].length, 1, 'rows written after it are found again');
    });
  });
}
