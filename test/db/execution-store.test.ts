import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openDatabase, type Database } from '../../db/database';
import { ExecutionStore } from '../../db/execution-store';
import { DepositAddressStore } from '../../db/deposit-addresses';
import { WatcherProgressStore } from '../../db/watcher-progress';
import { RefundLedger, type RefundDue } from '../../db/refund-ledger';
import { refundId } from '../../db/refund-rows';
import type { LedgerPosition } from '../../db/page-token';
import { migrations } from '../../db/migrations';
import {
  applyCancel,
  applyDeposit,
  initialRecord,
  recordVersion,
  withSigningDeadline,
  type ExecutionRecord,
} from '../../domain/execution-state';
import { executionWorkflowId } from '../../contracts/temporal';
import { postgresBinDir, startThrowawayPostgres, type ThrowawayPostgres } from '../support/postgres';
import { newestFirst, walletRecords } from '../support/records';

/** The same tests on both engines of the read model: SQLite (npm start) and PostgreSQL (DATABASE_URL). */
for (const kind of ['sqlite', 'postgres'] as const) {
  describe(`db: the read model on ${kind === 'sqlite' ? 'SQLite' : 'PostgreSQL (a throwaway server)'}`, function () {
    this.timeout(60_000);
    let tmp: string;
    let pg: ThrowawayPostgres | undefined;
    let settings: { url?: string; sqliteFile: string };
    let database: Database;
    let store: ExecutionStore;

    before(async function () {
      tmp = mkdtempSync(path.join(os.tmpdir(), 'intent-service-db-'));
      settings = { sqliteFile: path.join(tmp, 'read-model.sqlite') };
      if (kind === 'postgres') {
        if (!postgresBinDir()) {
          console.warn(
            '    PostgreSQL server binaries are not installed (pg_config --bindir): the PostgreSQL read model tests are skipped',
          );
          this.skip();
        }
        pg = await startThrowawayPostgres();
        settings = { ...settings, url: pg.url };
      }
      database = await openDatabase(settings);
      store = new ExecutionStore(database);
    });
    after(async () => {
      await database?.close();
      await pg?.stop();
      if (tmp) rmSync(tmp, { recursive: true, force: true });
    });

    it('when a deposit address is registered, then it is found by any case of the address on its chain only, again and again; another execution cannot take it', async () => {
      const addresses = new DepositAddressStore(database);
      const address = '0xAbCdEf0123456789aBcDeF0123456789AbCdEf01';
      const row = { chain: 'evm:31337', address, workflowId: 'exec:w:1', minAmount: '1000' };
      await addresses.register(row);
      await addresses.register(row);
      const found = await addresses.lookup('evm:31337', [address.toUpperCase().replace('0X', '0x'), '0x' + '00'.repeat(20)]);
      assert.deepEqual([...found], [[address.toLowerCase(), { workflowId: 'exec:w:1', minAmount: '1000', asset: 'native' }]]);
      assert.equal((await addresses.lookup('evm:1', [address])).size, 0);
      await assert.rejects(addresses.register({ ...row, workflowId: 'exec:w:2' }), /belongs to another execution/);
    });

    it('when an address takes its dust signals, then exactly `cap` are granted, in parallel too, for that address only', async () => {
      const addresses = new DepositAddressStore(database);
      const [a, b] = ['0x' + '11'.repeat(20), '0x' + '22'.repeat(20)];
      await addresses.register({ chain: 'evm:31337', address: a, workflowId: 'exec:w:dust-a', minAmount: '1000' });
      await addresses.register({ chain: 'evm:31337', address: b, workflowId: 'exec:w:dust-b', minAmount: '1000' });
      const granted = await Promise.all(
        Array.from({ length: 8 }, () => addresses.takeDustSignal('evm:31337', a.toUpperCase().replace('0X', '0x'), 5)),
      );
      assert.equal(granted.filter(Boolean).length, 5);
      assert.equal(await addresses.takeDustSignal('evm:31337', a, 5), false);
      assert.equal(await addresses.takeDustSignal('evm:31337', b, 5), true, 'another address has its own count');
      assert.equal(await addresses.takeDustSignal('evm:1', a, 5), false, 'no such address on that chain');
    });

    it('when the database is opened again, then every migration is recorded once and none runs twice', async () => {
      const again = await openDatabase(settings);
      try {
        const applied = await again.db
          .selectFrom('kysely_migration' as never)
          .select('name' as never)
          .execute();
        assert.deepEqual(
          applied.map((r) => (r as { name: string }).name),
          Object.keys(migrations(kind)),
        );
      } finally {
        await again.close();
      }
    });

    it('when a record is written, rewritten, and an older version arrives late, then the row keeps the newest version', async () => {
      const [prepared] = walletRecords('wallet-upsert', 1);
      const id = executionWorkflowId(prepared.wallet, prepared.executionId);
      const pending = applyDeposit(prepared, { txHash: '0x1' }, '2026-01-01T00:00:01.000Z').record;
      const cancelled = applyCancel(pending, '2026-01-01T00:00:02.000Z');
      assert.equal(await store.upsert(id, prepared), true, 'first write inserts');
      assert.equal(await store.upsert(id, prepared), false, 'the same version again changes nothing');
      assert.equal(await store.upsert(id, cancelled), true, 'a newer version replaces');
      assert.equal(await store.upsert(id, pending), false, 'an older version arriving late is ignored');
      assert.deepEqual(await store.get(prepared.wallet, prepared.executionId), cancelled);
      assert.equal(await store.get(prepared.wallet, 'no-such-id'), undefined);
      assert.equal(await store.get('other-wallet', prepared.executionId), undefined, "another wallet's id is not found");
    });

    it('when the same record versions are written concurrently in random order, then the newest wins', async () => {
      const [prepared] = walletRecords('wallet-race', 1);
      const id = executionWorkflowId(prepared.wallet, prepared.executionId);
      const versions: ExecutionRecord[] = [prepared, applyDeposit(prepared, { txHash: '0x1' }, '2026-01-01T00:00:01.000Z').record];
      versions.push(applyCancel(versions[1], '2026-01-01T00:00:02.000Z'));
      const writes = Array.from({ length: 30 }, (_, i) => versions[(i * 7) % 3]);
      await Promise.all(writes.map((r) => store.upsert(id, r)));
      const stored = await store.get(prepared.wallet, prepared.executionId);
      assert.equal(stored && recordVersion(stored), recordVersion(versions[2]));
    });

    it('when 20 prepares race for 7 places, then exactly 7 are admitted; a retried one is admitted again, a projected open record keeps its place, a final one frees it, a place past its grace stops counting', async () => {
      // Two connections on PostgreSQL, as two APIs have; SQLite's are serialised by its write lock
      // across processes (test/integration/capacity.test.ts), and two synchronous connections in one process would wait on each other.
      const second = kind === 'postgres' ? await openDatabase(settings) : database;
      const stores = [store, new ExecutionStore(second)];
      try {
        const counted = async () => {
          const open = await database.db
            .selectFrom('executions')
            .select((eb) => eb.fn.countAll<number | string>().as('n'))
            .where('status', 'in', ['PREPARED', 'OPERATION_PENDING'])
            .executeTakeFirstOrThrow();
          const places = await database.db
            .selectFrom('admissions')
            .select((eb) => eb.fn.countAll<number | string>().as('n'))
            .executeTakeFirstOrThrow();
          return Number(open.n) + Number(places.n);
        };
        const limits = { open: (await counted()) + 7, graceMs: 60_000 };
        const now = new Date();
        const ids = Array.from({ length: 20 }, (_, i) => `exec:admit-${i}:x`);
        const answers = await Promise.all(ids.map((id, i) => stores[i % 2].admit(id, `admit-${i}`, limits, now)));
        assert.deepEqual([...answers].sort(), [...Array<string>(7).fill('admitted'), ...Array<string>(13).fill('capacity')]);
        const inside = ids.filter((_, i) => answers[i] === 'admitted');
        const first = Number(inside[0].split('-')[1].split(':')[0]);
        assert.equal(await store.admit(inside[0], `admit-${first}`, limits, now), 'admitted', 'a retried prepare keeps its place');
        const record = initialRecord({
          executionId: 'x',
          wallet: `admit-${first}`,
          intent: {},
          intentHash: 'ab'.repeat(32),
          signerPublicKey: `0x${'cd'.repeat(32)}`,
          createdAt: now.toISOString(),
          expiresAt: new Date(now.getTime() + 3_600_000).toISOString(),
        });
        await store.upsert(inside[0], record);
        assert.equal(
          await store.admit('exec:admit-late:x', 'admit-late', limits, now),
          'capacity',
          'its PREPARED row counts instead of its place',
        );
        await store.upsert(inside[0], applyCancel(record, now.toISOString()));
        assert.equal(await store.admit('exec:admit-late:x', 'admit-late', limits, now), 'admitted', 'CANCELLED frees it');
        const later = new Date(now.getTime() + 61_000);
        assert.equal(
          await store.admit('exec:admit-later:x', 'admit-later', limits, later),
          'admitted',
          'places past their grace no longer count',
        );
        assert.equal(await store.admit('exec:admit-w2:x', 'admit-later', { perWallet: 1, graceMs: 60_000 }, later), 'wallet');
        for (const id of [...inside, 'exec:admit-late:x', 'exec:admit-later:x']) await store.release(id);
      } finally {
        if (second !== database) await second.close();
      }
    });

    it('when executions wait for a signature, then the drain finds those without a signing deadline whose record is older than the cutoff', async () => {
      const base = (id: string, at: string) =>
        applyDeposit(
          initialRecord({
            executionId: id,
            wallet: 'drain-w',
            intent: {},
            intentHash: 'ab'.repeat(32),
            signerPublicKey: `0x${'cd'.repeat(32)}`,
            createdAt: at,
            expiresAt: '2099-01-01T00:00:00.000Z',
          }),
          { txHash: `0x${id}` },
          at,
        ).record;
      const old = '2020-01-01T00:00:00.000Z';
      await store.upsert('exec:drain-w:old', base('old', old));
      await store.upsert('exec:drain-w:deadline', withSigningDeadline(base('deadline', old), '2020-01-02T00:00:00.000Z'));
      await store.upsert('exec:drain-w:recent', base('recent', '2030-01-01T00:00:00.000Z'));
      const found = await store.unsignedWithoutDeadline('2025-01-01T00:00:00.000Z');
      assert.deepEqual(
        [...found.keys()].filter((id) => id.startsWith('exec:drain-w:')),
        ['exec:drain-w:old'],
      );
      assert.equal(found.get('exec:drain-w:old')?.status, 'OPERATION_PENDING');
    });

    it('when a wallet has 1,000 executions (some created in the same millisecond), then paging newest first returns each exactly once, in order, at any page size', async () => {
      const wallet = 'wallet-1000';
      const records = walletRecords(wallet, 1000);
      // Another wallet's executions must never show up.
      const others = walletRecords('wallet-other', 50);
      for (const r of [...records, ...others]) await store.upsert(executionWorkflowId(r.wallet, r.executionId), r);
      const expected = newestFirst(records).map((r) => r.executionId);
      for (const pageSize of [1, 37, 100]) {
        const seen: string[] = [];
        let after;
        for (let pages = 0; pages < 2000; pages++) {
          const page = await store.list(wallet, { pageSize, after });
          assert.ok(page.records.length <= pageSize);
          seen.push(...page.records.map((r) => r.executionId));
          if (!page.next) break;
          after = page.next;
        }
        assert.equal(new Set(seen).size, seen.length, `no duplicates at pageSize ${pageSize}`);
        assert.deepEqual(seen, expected, `every execution once, newest first, at pageSize ${pageSize}`);
      }
      const cancelled = await store.list(wallet, { pageSize: 100, statuses: ['CANCELLED', 'OPERATION_PENDING'] });
      assert.ok(cancelled.records.every((r) => r.status === 'CANCELLED' || r.status === 'OPERATION_PENDING'));
      assert.deepEqual(
        cancelled.records.map((r) => r.executionId),
        expected.filter((id) => records.find((r) => r.executionId === id)!.status !== 'PREPARED').slice(0, 100),
      );
    });

    it('when executions are added while a client pages, then the pages it had not reached yet still hold every older execution exactly once', async () => {
      const wallet = 'wallet-moving';
      const records = walletRecords(wallet, 120, { perInstant: 3 });
      for (const r of records) await store.upsert(executionWorkflowId(r.wallet, r.executionId), r);
      const seen: string[] = [];
      let page = await store.list(wallet, { pageSize: 25 });
      let round = 0;
      for (;;) {
        seen.push(...page.records.map((r) => r.executionId));
        // Newer executions arrive between pages (later createdAt: they belong before page 1).
        const newer = walletRecords(wallet, 2, { start: Date.parse('2027-01-01T00:00:00.000Z') + round * 10_000 }).map((r) => ({
          ...r,
          executionId: `${r.executionId}-new${round}`,
        }));
        for (const r of newer) await store.upsert(executionWorkflowId(r.wallet, r.executionId), r);
        round++;
        if (!page.next) break;
        page = await store.list(wallet, { pageSize: 25, after: page.next });
      }
      assert.deepEqual(
        seen,
        newestFirst(records).map((r) => r.executionId),
      );
    });

    it('when the chain watcher records its progress, then the checkpoint reads back as written (back too, after a reorganisation), a transfer mined again replaces its signal, and signals far below the checkpoint are forgotten', async () => {
      const progress = new WatcherProgressStore(database);
      const chain = 'evm:progress';
      assert.equal(await progress.checkpoint(chain), undefined);
      const signal = (block: number, hash: string) => ({
        blockNumber: block,
        blockHash: hash,
        txHash: '0x' + 'ab'.repeat(32),
        transferIndex: 0,
        asset: 'native' as const,
        to: '0x' + 'cd'.repeat(20),
        amount: '5',
        workflowId: 'exec:w:progress',
        reorged: true as const,
      });
      await progress.saveSignals(chain, [signal(100, '0xh100'), { ...signal(10, '0xh10'), txHash: '0x' + '01'.repeat(32) }]);
      await progress.saveSignals(chain, [signal(104, '0xh104')]);
      await progress.saveCheckpoint(chain, { number: 120, hash: '0xc120' }, 64);
      assert.deepEqual(await progress.checkpoint(chain), { number: 120, hash: '0xc120' });
      // Mined again in block 104: one entry, the new block, never kept as reorged; block 10 is more than 64 below 120.
      const { reorged: _, ...kept } = signal(104, '0xh104');
      assert.deepEqual(await progress.signals(chain), [kept]);
      await progress.saveCheckpoint(chain, { number: 110, hash: '0xc110' }, 64);
      assert.deepEqual(await progress.checkpoint(chain), { number: 110, hash: '0xc110' });
      await progress.forgetSignals(chain, [kept]);
      assert.deepEqual(await progress.signals(chain), []);
      assert.equal(await progress.checkpoint('evm:other'), undefined);
    });

    describe('the refunds ledger', () => {
      const due = (n: number, over: Partial<RefundDue> = {}): RefundDue => ({
        workflowId: `exec:w${n % 3}:e${n}`,
        wallet: `w${n % 3}`,
        executionId: `e${n}`,
        chain: n % 2 ? 'evm:1' : 'evm:31337',
        txHash: `0x${String(n).padStart(64, '0')}`,
        amount: String(1000 + n),
        asset: 'native',
        reason: 'other-tx',
        reportedBy: 'chain-watcher',
        ...over,
      });

      /** A row of a wallet no other test lists. */
      const own = (n: number, over: Partial<RefundDue> = {}) =>
        due(n, { wallet: 'w-reorg', workflowId: `exec:w-reorg:e${n}`, executionId: `e${n}`, ...over });

      it('when the same transfer is reported by the execution, the API and the watcher, then it is one row, the first report', async () => {
        const ledger = new RefundLedger(database);
        const first = await ledger.recordDue(due(900, { reportedBy: 'execution' }));
        await Promise.all([ledger.recordDue(due(900, { reportedBy: 'api' })), ledger.recordDue(due(900, { reportedBy: 'chain-watcher' }))]);
        const rows = await ledger.ofExecution(due(900).workflowId);
        assert.deepEqual(
          rows.map((r) => [r.id, r.reportedBy, r.state]),
          [[first, 'execution', 'due']],
        );
      });

      it('when a reorganisation removes the transfer of a row, then a due row goes void (with why and when) and a settled one stays; the transfer mined again brings it back to due; each change is announced in order, the newest only', async () => {
        const ledger = new RefundLedger(database);
        const id = await ledger.recordDue(own(940));
        const settledId = await ledger.recordDue(own(941));
        await ledger.settle(settledId, { state: 'waived', reason: 'test' }, 'ops');
        const ofRow = async () => (await ledger.unannounced(1000)).find((r) => r.id === id);
        assert.deepEqual([(await ofRow())?.event, (await ofRow())?.announcedEvents], [1, 0]);
        await ledger.markAnnounced([{ id, event: 1 }]);
        assert.equal(await ofRow(), undefined);

        const at = new Date('2026-11-26T10:00:00.000Z');
        assert.deepEqual(await ledger.void([id, settledId, 'f'.repeat(32)], 'reorged', at), { voided: [id], settled: [settledId] });
        assert.deepEqual(await ledger.void([id], 'reorged', at), { voided: [], settled: [] });
        const voided = await ledger.get(id);
        assert.deepEqual([voided?.state, voided?.voidReason, voided?.voidedAt], ['void', 'reorged', at.toISOString()]);
        assert.equal((await ledger.get(settledId))?.state, 'waived');
        assert.deepEqual([(await ofRow())?.event, (await ofRow())?.announcedEvents], [2, 1]);
        // A report of the same transfer does not bring it back: only the watcher, once it read it at depth, does.
        await ledger.recordDue(own(940, { reportedBy: 'execution' }));
        assert.equal((await ledger.get(id))?.state, 'void');

        assert.deepEqual(await ledger.restore([id, settledId]), [id]);
        assert.deepEqual(await ledger.restore([id]), []);
        const back = await ledger.get(id);
        assert.deepEqual([back?.state, back?.voidedAt, back?.voidReason], ['due', undefined, undefined]);
        assert.deepEqual([(await ofRow())?.event, (await ofRow())?.announcedEvents], [3, 1]);
        await ledger.markAnnounced([{ id, event: 3 }]);
        await ledger.markAnnounced([{ id, event: 2 }]);
        assert.equal(await ofRow(), undefined);
      });

      it('when a dust batch is recorded, then it keeps its count and hold; zero is refused', async () => {
        const ledger = new RefundLedger(database);
        const id = await ledger.recordDue(own(960, { amount: '30', transfers: 30, holdReason: 'too-small', reason: 'below-minimum' }));
        const row = await ledger.get(id);
        assert.deepEqual([row?.amount, row?.transfers, row?.holdReason], ['30', 30, 'too-small']);
        assert.equal((await ledger.get(await ledger.recordDue(own(961))))?.transfers, 1);
        await assert.rejects(ledger.recordDue(own(962, { amount: '0' })), /not base units/);
      });

      it('when a transfer is first reported without its sender, then a later report that knows it fills it in, and no report after that changes it', async () => {
        const ledger = new RefundLedger(database);
        const id = await ledger.recordDue(due(902, { reportedBy: 'execution' }));
        assert.equal((await ledger.get(id))?.sender, undefined);
        const sender = '0x' + 'Ab'.repeat(20);
        await ledger.recordDue(due(902, { reportedBy: 'chain-watcher', sender }));
        await ledger.recordDue(due(902, { reportedBy: 'api', sender: '0x' + '99'.repeat(20) }));
        await ledger.recordDue(due(902, { reportedBy: 'api' }));
        const row = await ledger.get(id);
        assert.equal(row?.sender, sender.toLowerCase());
        assert.equal(row?.reportedBy, 'execution');
      });

      it('when a row is recorded with a contract payer, then it reads back as one; the writer that fills in a sender fills in its kind with it', async () => {
        const ledger = new RefundLedger(database);
        const contract = await ledger.recordDue(due(903, { sender: '0x' + 'c0'.repeat(20), payerKind: 'contract' }));
        assert.deepEqual(
          [(await ledger.get(contract))?.sender, (await ledger.get(contract))?.payerKind],
          ['0x' + 'c0'.repeat(20), 'contract'],
        );
        const later = await ledger.recordDue(due(904));
        assert.equal((await ledger.get(later))?.payerKind, undefined);
        await ledger.recordDue(due(904, { reportedBy: 'chain-watcher', sender: '0x' + 'e0'.repeat(20), payerKind: 'eoa' }));
        assert.equal((await ledger.get(later))?.payerKind, 'eoa');
      });

      it("when an execution's rows are counted and listed by executionId, then the count and the list hold exactly that execution's rows", async () => {
        const ledger = new RefundLedger(database);
        const rows = (k: number) => Array.from({ length: k }, (_, i) => due(950, { txHash: `0x${String(9_500 + i).padStart(64, '0')}` }));
        for (const r of rows(13)) await ledger.recordDue(r);
        await ledger.recordDue(due(951));
        const counts = await ledger.countsOf([due(950).workflowId, due(951).workflowId, 'exec:nobody:none']);
        assert.deepEqual(
          new Map(counts),
          new Map([
            [due(950).workflowId, 13],
            [due(951).workflowId, 1],
          ]),
        );
        const listed = await ledger.list({ wallet: due(950).wallet, executionId: 'e950', pageSize: 50 });
        assert.equal(listed.rows.length, 13);
        assert.ok(listed.rows.every((r) => r.executionId === 'e950'));
        assert.deepEqual([...(await ledger.existing([refundId(due(951)), 'f'.repeat(32)]))], [refundId(due(951))]);
      });

      it('when 60 rows are listed by state, wallet and chain, page by page, then each matching row comes once, newest first', async () => {
        const ledger = new RefundLedger(database);
        const base = Date.parse('2026-06-01T00:00:00.000Z');
        // Pairs share a millisecond: the id breaks the tie.
        for (let n = 0; n < 60; n++) await ledger.recordDue(due(n), new Date(base + Math.floor(n / 2)));
        const listed: string[] = [];
        let after: LedgerPosition | undefined;
        do {
          const page = await ledger.list({ state: 'due', wallet: 'w1', chain: 'evm:1', pageSize: 4, after });
          listed.push(...page.rows.map((r) => r.executionId));
          after = page.next;
        } while (after);
        const expected = Array.from({ length: 60 }, (_, n) => n)
          .filter((n) => n % 3 === 1 && n % 2 === 1)
          .map((n) => ({ n, id: refundId(due(n)), at: base + Math.floor(n / 2) }))
          .sort((a, b) => b.at - a.at || (a.id < b.id ? 1 : -1))
          .map((x) => `e${x.n}`);
        assert.deepEqual(listed, expected);
      });

      /** A refund transaction's hash (0x + 64 hex digits) named by `tag`. */
      const refundTx = (tag: string) => '0x' + Buffer.from(tag).toString('hex').padStart(64, '0');

      it('when a row is marked refunded twice with the same txHash, then both answer the row; with another txHash, or waived, it is a conflict; two operators at once: one settles it', async () => {
        const ledger = new RefundLedger(database);
        const id = await ledger.recordDue(due(700));
        const first = await ledger.settle(id, { state: 'refunded', txHash: refundTx('paid') }, 'ops-1');
        assert.equal(first.outcome, 'settled');
        const again = await ledger.settle(id, { state: 'refunded', txHash: refundTx('paid') }, 'ops-2');
        assert.equal(again.outcome, 'same');
        assert.ok(again.outcome === 'same' && again.row.settledBy === 'ops-1' && again.row.refundTxHash === refundTx('paid'));
        assert.equal((await ledger.settle(id, { state: 'refunded', txHash: refundTx('other') }, 'ops-1')).outcome, 'conflict');
        assert.equal((await ledger.settle(id, { state: 'waived', reason: 'dust' }, 'ops-1')).outcome, 'conflict');
        assert.equal((await ledger.settle('f'.repeat(32), { state: 'waived', reason: 'dust' }, 'ops-1')).outcome, 'missing');

        const contested = await ledger.recordDue(due(701));
        const race = await Promise.all([
          ledger.settle(contested, { state: 'refunded', txHash: refundTx('a') }, 'ops-a'),
          ledger.settle(contested, { state: 'refunded', txHash: refundTx('b') }, 'ops-b'),
          ledger.settle(contested, { state: 'waived', reason: 'no' }, 'ops-c'),
        ]);
        assert.deepEqual(race.map((r) => r.outcome).sort(), ['conflict', 'conflict', 'settled']);
        const [row] = await ledger.ofExecution(due(701).workflowId);
        const winner = race.find((r) => r.outcome === 'settled');
        assert.ok(winner && winner.outcome === 'settled');
        assert.deepEqual(row, winner.row);
      });

      it('when a refund txHash comes in another case, then it is the same settlement, stored lowercase; a malformed one throws and writes nothing', async () => {
        const ledger = new RefundLedger(database);
        const id = await ledger.recordDue(due(710));
        const hash = '0x' + 'aB'.repeat(32);
        const first = await ledger.settle(id, { state: 'refunded', txHash: hash }, 'ops-1');
        assert.ok(first.outcome === 'settled' && first.row.refundTxHash === hash.toLowerCase());
        assert.equal((await ledger.settle(id, { state: 'refunded', txHash: '0x' + 'AB'.repeat(32) }, 'ops-2')).outcome, 'same');
        const other = await ledger.recordDue(due(711));
        for (const txHash of ['0xpaid', hash.slice(0, 65), hash + '0', ' ' + hash.slice(1)])
          await assert.rejects(ledger.settle(other, { state: 'refunded', txHash }, 'ops-1'), /not 0x \+ 64 hex digits/);
        assert.equal((await ledger.get(other))?.state, 'due');
      });

      it('when one refund transaction is recorded for rows of two deposit addresses, then the second is tx-used and stays due; rows of one address (or of one execution without an address) share it; two at once: one wins', async () => {
        const ledger = new RefundLedger(database);
        const addresses = new DepositAddressStore(database);
        const address = (n: number) => '0x' + String(n).padStart(40, '0');
        for (const n of [720, 721])
          await addresses.register({ chain: 'evm:31337', address: address(n), workflowId: due(n).workflowId, minAmount: '1' });
        const a1 = await ledger.recordDue(due(720, { chain: 'evm:31337' }));
        const a2 = await ledger.recordDue(due(720, { chain: 'evm:31337', txHash: refundTx('second transfer') }));
        const b = await ledger.recordDue(due(721, { chain: 'evm:31337' }));
        const noAddress = await ledger.recordDue(due(722));
        const tx = refundTx('one refund');
        assert.equal((await ledger.settle(a1, { state: 'refunded', txHash: tx }, 'ops-1')).outcome, 'settled');
        assert.equal(
          (await ledger.settle(a2, { state: 'refunded', txHash: tx.toUpperCase().replace('0X', '0x') }, 'ops-1')).outcome,
          'settled',
        );
        for (const id of [b, noAddress]) {
          const used = await ledger.settle(id, { state: 'refunded', txHash: tx }, 'ops-2');
          assert.ok(used.outcome === 'tx-used' && [a1, a2].includes(used.otherId) && used.row.state === 'due', JSON.stringify(used));
        }
        // An execution without a deposit address is its own group: its rows share one refund.
        const n1 = await ledger.recordDue(due(723));
        const n2 = await ledger.recordDue(due(723, { txHash: refundTx('another transfer') }));
        assert.equal((await ledger.settle(n1, { state: 'refunded', txHash: refundTx('n') }, 'ops-1')).outcome, 'settled');
        assert.equal((await ledger.settle(n2, { state: 'refunded', txHash: refundTx('n') }, 'ops-1')).outcome, 'settled');
        assert.equal((await ledger.settle(b, { state: 'refunded', txHash: refundTx('n') }, 'ops-1')).outcome, 'tx-used');

        const racers = await Promise.all([724, 725, 726].map((n) => ledger.recordDue(due(n))));
        const race = await Promise.all(racers.map((id) => ledger.settle(id, { state: 'refunded', txHash: refundTx('raced') }, 'ops')));
        assert.deepEqual(race.map((r) => r.outcome).sort(), ['settled', 'tx-used', 'tx-used']);
      });

      it('when an amount is not base units, or zero, then recordDue throws and writes nothing; an execution record holding one yields its row without the amount', async () => {
        const ledger = new RefundLedger(database);
        for (const amount of ['0', '0099.5', '1.5', '-1', '1e3', '', ' 1', '0x10', '01', (2n ** 256n).toString(), '9'.repeat(79)])
          await assert.rejects(ledger.recordDue(due(730, { amount })), /not base units/, amount);
        assert.deepEqual(await ledger.ofExecution(due(730).workflowId), []);
        for (const amount of ['1', (2n ** 256n - 1n).toString()]) await ledger.recordDue(due(731, { amount, txHash: refundTx(amount) }));
        assert.equal((await ledger.ofExecution(due(731).workflowId)).length, 2);
      });
    });
  });
}
