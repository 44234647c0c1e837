import assert from 'node:assert/strict';
import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openDatabase, type Database } from '../../db/database';
import { DepositAddressStore } from '../../db/deposit-addresses';
import { RefundLedger, type RefundDue, type RefundRow, type RefundVariant } from '../../db/refund-ledger';
import { RefundPayments, type RefundJob } from '../../db/refund-payments';
import { postgresBinDir, startThrowawayPostgres, type ThrowawayPostgres } from '../support/postgres';

const CHAIN = 'evm:31337';
const PAYER = '0x' + 'ab'.repeat(20);
const REFUND_TO = '0x' + 'cd'.repeat(20);

/** A deposit address of its own per execution `n` (`0x` + 40 hex digits). */
const addressOf = (n: number) => '0x' + n.toString(16).padStart(40, '0');
const workflowOf = (n: number) => `exec:w:refund-${n}`;

/** A signed transaction of a row's nonce, as the refunder keeps it. */
function variant(kind: RefundVariant['kind'], n: number, value = '990000'): RefundVariant {
  return {
    kind,
    hash: '0x' + n.toString(16).padStart(64, '0'),
    raw: '0x02' + n.toString(16).padStart(8, '0'),
    to: kind === 'refund' ? REFUND_TO : addressOf(1),
    value: kind === 'refund' ? value : '0',
    gas: '21000',
    maxFeePerGas: '2000000000',
    maxPriorityFeePerGas: '1000000000',
    signedAt: '2026-03-01T00:00:00.000Z',
  };
}

/** The same tests on both engines of the read model: SQLite (npm start) and PostgreSQL (DATABASE_URL). */
for (const kind of ['sqlite', 'postgres'] as const) {
  describe(`db: the service's refund payments on ${kind === 'sqlite' ? 'SQLite' : 'PostgreSQL (a throwaway server)'}`, function () {
    this.timeout(60_000);
    let tmp: string;
    let pg: ThrowawayPostgres | undefined;
    let database: Database;
    let ledger: RefundLedger;
    let payments: RefundPayments;
    let addresses: DepositAddressStore;
    /** Rows are created one millisecond apart, in the order a test writes them. */
    let clock: number;

    before(async function () {
      tmp = mkdtempSync(path.join(os.tmpdir(), 'intent-service-refund-payments-'));
      let settings: { url?: string; sqliteFile: string } = { sqliteFile: path.join(tmp, 'read-model.sqlite') };
      if (kind === 'postgres') {
        if (!postgresBinDir()) {
          console.warn(
            '    PostgreSQL server binaries are not installed (pg_config --bindir): the PostgreSQL refund payment tests are skipped',
          );
          this.skip();
        }
        pg = await startThrowawayPostgres();
        settings = { ...settings, url: pg.url };
      }
      database = await openDatabase(settings);
      ledger = new RefundLedger(database);
      payments = new RefundPayments(database);
      addresses = new DepositAddressStore(database);
    });
    after(async () => {
      await database?.close();
      await pg?.stop();
      if (tmp) rmSync(tmp, { recursive: true, force: true });
    });
    // Each case starts from empty tables: holdUnpayable and addressesToPay read the whole ledger.
    beforeEach(async () => {
      await database.db.deleteFrom('refunds').execute();
      await database.db.deleteFrom('deposit_addresses').execute();
      clock = Date.parse('2026-03-01T00:00:00.000Z');
    });

    /** Registers execution `n`'s deposit address. */
    const register = (n: number) =>
      addresses.register({ chain: CHAIN, address: addressOf(n), workflowId: workflowOf(n), minAmount: '1000' });

    /** A row of execution `n` (a transfer `tx` of its deposit address), written `due`, one millisecond after the previous one. */
    async function due(n: number, tx: number, fields: Partial<RefundDue> = {}): Promise<RefundRow> {
      const id = await ledger.recordDue(
        {
          workflowId: workflowOf(n),
          wallet: 'w',
          executionId: `refund-${n}`,
          chain: CHAIN,
          txHash: '0x' + tx.toString(16).padStart(64, '0'),
          transferIndex: 0,
          amount: '1000000',
          asset: 'native',
          sender: PAYER,
          payerKind: 'eoa',
          reason: 'other-tx',
          reportedBy: 'chain-watcher',
          ...fields,
        },
        new Date(clock++),
      );
      return (await ledger.get(id))!;
    }

    /** The job of `row` as the refunder holds it: the row read now, with its deposit address. */
    async function jobOf(n: number, row: RefundRow): Promise<RefundJob> {
      const source = await payments.source(CHAIN, addressOf(n));
      assert.ok(source, `execution ${n} has a deposit address`);
      return { row: (await ledger.get(row.id))!, members: [], source };
    }

    const noncesMined = async (n: number) => (await payments.source(CHAIN, addressOf(n)))!.noncesMined;

    it("when a due row starts paying at the address's count of mined nonces, then it is paying with that nonce, its destination and its variant, once", async () => {
      await register(1);
      const row = await due(1, 1);
      const job = await jobOf(1, row);
      assert.equal(job.source.noncesMined, 0);
      const v = variant('refund', 1);
      assert.equal(await payments.startPaying(job, 0, REFUND_TO.toUpperCase().replace('0X', '0x'), v), true);
      const after = (await ledger.get(row.id))!;
      assert.equal(after.state, 'paying');
      assert.equal(after.refundNonce, 0);
      assert.equal(after.refundTo, REFUND_TO);
      assert.deepEqual(after.refundVariants, [v]);
      assert.equal(after.refundBlock, undefined);
      assert.equal(await payments.startPaying(job, 0, REFUND_TO, variant('refund', 2)), false, 'a second start finds it paying');
      assert.deepEqual((await ledger.get(row.id))!.refundVariants, [v], 'the second signature is not written');
    });

    it('when the nonce given is not the count of mined nonces, then startPaying writes nothing', async () => {
      await register(1);
      const row = await due(1, 1);
      const job = await jobOf(1, row);
      assert.equal(await payments.startPaying(job, 1, REFUND_TO, variant('refund', 1)), false);
      const after = (await ledger.get(row.id))!;
      assert.equal(after.state, 'due');
      assert.equal(after.refundNonce, undefined);
      assert.equal(after.refundVariants, undefined);
    });

    it('when another row of the same address has a nonce not mined, then startPaying of a second row writes nothing; another address is not held back', async () => {
      await register(1);
      await register(2);
      const first = await due(1, 1);
      const second = await due(1, 2);
      const other = await due(2, 3);
      assert.equal(await payments.startPaying(await jobOf(1, first), 0, REFUND_TO, variant('refund', 1)), true);
      assert.equal(await payments.startPaying(await jobOf(1, second), 0, REFUND_TO, variant('refund', 2)), false);
      assert.equal((await ledger.get(second.id))!.state, 'due');
      assert.equal((await ledger.get(second.id))!.refundNonce, undefined);
      assert.equal(await payments.startPaying(await jobOf(2, other), 0, REFUND_TO, variant('refund', 3)), true);
    });

    it('when a row is not due (held, or settled by hand), then startPaying writes nothing', async () => {
      await register(1);
      const held = await due(1, 1);
      assert.equal(await payments.hold(held.id, 'contract-payer'), true);
      assert.equal(await payments.hold(held.id, 'too-small'), false, 'a held row is not held again');
      assert.equal(await payments.startPaying(await jobOf(1, held), 0, REFUND_TO, variant('refund', 1)), false);
      const heldAfter = (await ledger.get(held.id))!;
      assert.equal(heldAfter.state, 'held');
      assert.equal(heldAfter.holdReason, 'contract-payer');
      assert.equal(heldAfter.refundNonce, undefined);

      const waived = await due(1, 2);
      assert.equal((await ledger.settle(waived.id, { state: 'waived', reason: 'test' }, 'ops')).outcome, 'settled');
      assert.equal(await payments.startPaying(await jobOf(1, waived), 0, REFUND_TO, variant('refund', 2)), false);
      assert.equal((await ledger.get(waived.id))!.state, 'waived');
    });

    it('when variants are updated, then only a caller holding the current list writes; a stale list writes nothing; none once the nonce is mined', async () => {
      await register(1);
      const row = await due(1, 1);
      const v1 = variant('refund', 1, '990000');
      const v2 = variant('refund', 2, '980000');
      const v3 = variant('refund', 3, '970000');
      assert.equal(await payments.startPaying(await jobOf(1, row), 0, REFUND_TO, v1), true);
      assert.equal(await payments.updateVariants([row.id], [v1], [v1, v2]), true);
      assert.deepEqual((await ledger.get(row.id))!.refundVariants, [v1, v2]);
      assert.equal(await payments.updateVariants([row.id], [v1], [v1, v3]), false, 'the list read before v2 is stale');
      assert.deepEqual((await ledger.get(row.id))!.refundVariants, [v1, v2]);
      const broadcast = { ...v2, sentAtBlock: 17 };
      assert.equal(await payments.updateVariants([row.id], [v1, v2], [v1, broadcast]), true);
      assert.deepEqual((await ledger.get(row.id))!.refundVariants, [v1, broadcast]);

      assert.ok(await payments.recordMined(await jobOf(1, row), { hash: v1.hash, block: 20, succeeded: true }));
      assert.equal(await payments.updateVariants([row.id], [v1, broadcast], [v1, broadcast, v3]), false, 'mined: the list is final');
      assert.deepEqual((await ledger.get(row.id))!.refundVariants, [v1, broadcast]);
    });

    it("when a refund variant is mined and succeeded, then the row is refunded with its hash, block and value, and the address's count of mined nonces grows by one, once", async () => {
      await register(1);
      const row = await due(1, 1);
      const v1 = variant('refund', 1, '990000');
      const v2 = variant('refund', 2, '980000');
      assert.equal(await payments.startPaying(await jobOf(1, row), 0, REFUND_TO, v1), true);
      assert.equal(await payments.updateVariants([row.id], [v1], [v1, v2]), true);
      const job = await jobOf(1, row);
      const after = await payments.recordMined(job, { hash: v2.hash, block: 42, succeeded: true });
      assert.ok(after);
      assert.equal(after.state, 'refunded');
      assert.equal(after.refundTxHash, v2.hash);
      assert.equal(after.refundBlock, 42);
      assert.equal(after.refundValue, '980000', 'the value of the variant mined, not of the first');
      assert.equal(after.settledBy, 'refunder');
      assert.equal(after.refundNonce, 0);
      assert.equal(await noncesMined(1), 1);

      assert.equal(await payments.recordMined(job, { hash: v2.hash, block: 42, succeeded: true }), undefined);
      assert.equal(await payments.recordMined(job, { hash: v1.hash, block: 43, succeeded: true }), undefined);
      assert.equal(await noncesMined(1), 1, 'counted once');
      assert.equal((await ledger.get(row.id))!.refundBlock, 42);
      assert.deepEqual(await payments.paidBy(CHAIN).then((rows) => rows.map((r) => r.id)), [row.id]);
      await assert.rejects(
        payments.recordMined(job, { hash: '0x' + 'ee'.repeat(32), block: 44, succeeded: true }),
        /is not a variant of refund/,
      );
    });

    it('when rows of one address start paying together, then all or none are paying at one nonce with one list of variants; the next job leads with the oldest and names the others', async () => {
      await register(1);
      const [a, b, c] = [await due(1, 1), await due(1, 2, { amount: '3000000' }), await due(1, 3)];
      const v1 = variant('refund', 1, '4990000');
      // A member settled by hand meanwhile: nothing is written for any of them.
      assert.equal((await ledger.settle(c.id, { state: 'waived', reason: 'test' }, 'ops')).outcome, 'settled');
      assert.equal(await payments.startPaying(await jobOf(1, a), 0, REFUND_TO, v1, [b, c]), false);
      for (const r of [a, b]) assert.equal((await ledger.get(r.id))!.state, 'due', 'all or none');

      assert.deepEqual(
        (await payments.dueAlongside(await jobOf(1, a), 10)).map((r) => r.id),
        [b.id],
      );
      assert.equal(await payments.startPaying(await jobOf(1, a), 0, REFUND_TO, v1, [b]), true);
      for (const r of [a, b]) {
        const now = (await ledger.get(r.id))!;
        assert.equal(now.state, 'paying');
        assert.equal(now.refundNonce, 0);
        assert.deepEqual(now.refundVariants, [v1]);
      }
      const job = (await payments.next(CHAIN, addressOf(1)))!;
      assert.equal(job.row.id, a.id);
      assert.deepEqual(
        job.members.map((m) => m.id),
        [b.id],
      );
      // A member is settled by nobody while the transaction is out: it may still be mined.
      assert.equal((await ledger.settle(b.id, { state: 'waived', reason: 'x' }, 'ops')).outcome, 'paying');
      const v2 = { ...variant('refund', 2, '4980000'), sentAtBlock: 3 };
      assert.equal(await payments.updateVariants([a.id], [v1], [v1, v2]), false, 'one list for the group: a part of it writes nothing');
      assert.equal(await payments.updateVariants([a.id, b.id], [v1], [v1, v2]), true);
      assert.deepEqual((await ledger.get(b.id))!.refundVariants, [v1, v2]);
    });

    it('when the nonce of rows paid together is mined by their refund, then each is refunded by that transaction with its share of the value (shares add up to it), and the nonce counts once', async () => {
      await register(1);
      const [a, b, c] = [
        await due(1, 1, { amount: '1000000' }),
        await due(1, 2, { amount: '3000000' }),
        await due(1, 3, { amount: '1000000' }),
      ];
      const v1 = variant('refund', 1, '4999997');
      assert.equal(await payments.startPaying(await jobOf(1, a), 0, REFUND_TO, v1, [b, c]), true);
      const job = (await payments.next(CHAIN, addressOf(1)))!;
      const after = await payments.recordMined(job, { hash: v1.hash, block: 30, succeeded: true });
      assert.equal(after?.state, 'refunded');
      const rows = await Promise.all([a, b, c].map(async (r) => (await ledger.get(r.id))!));
      for (const r of rows) {
        assert.equal(r.state, 'refunded');
        assert.equal(r.refundTxHash, v1.hash);
        assert.equal(r.refundBlock, 30);
      }
      // In proportion to 1 : 3 : 1, rounded down, the unit rounding leaves to the leading row.
      assert.deepEqual(
        rows.map((r) => r.refundValue),
        ['1000000', '2999998', '999999'],
      );
      assert.equal(
        rows.reduce((sum, r) => sum + BigInt(r.refundValue!), 0n),
        4999997n,
        'the shares add up to what the transaction paid',
      );
      assert.equal(await noncesMined(1), 1);
      assert.equal(await payments.recordMined(job, { hash: v1.hash, block: 30, succeeded: true }), undefined, 'once');
      assert.equal(await noncesMined(1), 1);
    });

    it("when one row of a group is voided (its transfer reorganised away) and the group's cancel is mined, then it stays void, the others are due again with their nonce forgotten, and the cancel's fee comes out of the leading row", async () => {
      await register(1);
      const [a, b] = [await due(1, 1), await due(1, 2)];
      const v1 = variant('refund', 1);
      const cancel = variant('cancel', 2);
      assert.equal(await payments.startPaying(await jobOf(1, a), 0, REFUND_TO, v1, [b]), true);
      await ledger.void([b.id], 'reorged');
      assert.equal(await payments.updateVariants([a.id, b.id], [v1], [v1, cancel]), true);
      const job = (await payments.next(CHAIN, addressOf(1)))!;
      assert.deepEqual(
        job.members.map((m) => [m.id, m.state]),
        [[b.id, 'void']],
      );
      assert.ok(await payments.recordMined(job, { hash: cancel.hash, block: 12, succeeded: true, fee: '21000' }));
      const [lead, member] = [(await ledger.get(a.id))!, (await ledger.get(b.id))!];
      assert.equal(lead.state, 'due');
      assert.equal(lead.refundNonce, undefined);
      assert.equal(lead.feesSpent, '21000');
      assert.equal(member.state, 'void');
      assert.equal(member.refundBlock, 12);
      assert.equal(member.feesSpent, undefined);
      assert.equal(await noncesMined(1), 1);
      // The next start takes the next nonce, alone now.
      assert.equal(await payments.startPaying(await jobOf(1, a), 1, REFUND_TO, variant('refund', 3)), true);
    });

    it('when the nonce of rows paid together is taken by a transaction the ledger did not sign, then each is held nonce-mismatch with its nonce, and none can be waived by hand', async () => {
      await register(1);
      const [a, b] = [await due(1, 1), await due(1, 2)];
      assert.equal(await payments.startPaying(await jobOf(1, a), 0, REFUND_TO, variant('refund', 1), [b]), true);
      assert.equal(await payments.recordNonceUsedElsewhere((await payments.next(CHAIN, addressOf(1)))!, 50), true);
      for (const r of [a, b]) {
        const now = (await ledger.get(r.id))!;
        assert.equal(now.state, 'held');
        assert.equal(now.holdReason, 'nonce-mismatch');
        assert.equal((await ledger.settle(r.id, { state: 'waived', reason: 'x' }, 'ops')).outcome, 'nonce-taken');
      }
    });

    it('when the same mined nonce is recorded by several callers at once (a refund, or a cancel of a restored row), then it is recorded and counted once', async () => {
      for (let n = 1; n <= 10; n++) {
        await register(n);
        const row = await due(n, n);
        const v1 = variant('refund', n);
        const cancel = variant('cancel', 100 + n);
        assert.equal(await payments.startPaying(await jobOf(n, row), 0, REFUND_TO, v1), true);
        // Odd rows: their refund mines; even rows: voided, restored, and the cancel mines (the row goes back to due).
        if (n % 2 === 0) {
          await ledger.void([row.id], 'reorged');
          assert.equal(await payments.updateVariants([row.id], [v1], [v1, cancel]), true);
          await ledger.restore([row.id]);
        }
        const job = await jobOf(n, row);
        const hash = n % 2 === 0 ? cancel.hash : v1.hash;
        const results = await Promise.all(Array.from({ length: 5 }, () => payments.recordMined(job, { hash, block: 9, succeeded: true })));
        assert.equal(results.filter((r) => r !== undefined).length, 1, `row ${n}`);
        assert.equal(await noncesMined(n), 1, `row ${n}`);
        assert.equal((await ledger.get(row.id))!.state, n % 2 === 0 ? 'due' : 'refunded');
      }
    });

    it('when a refund variant is mined with status 0, then the row is held as reverted with its block, and its nonce counts as mined', async () => {
      await register(1);
      const row = await due(1, 1);
      const v1 = variant('refund', 1);
      assert.equal(await payments.startPaying(await jobOf(1, row), 0, REFUND_TO, v1), true);
      const after = await payments.recordMined(await jobOf(1, row), { hash: v1.hash, block: 50, succeeded: false });
      assert.ok(after);
      assert.equal(after.state, 'held');
      assert.equal(after.holdReason, 'reverted');
      assert.equal(after.refundBlock, 50);
      assert.equal(after.refundTxHash, undefined);
      assert.equal(after.settledAt, undefined);
      assert.equal(await noncesMined(1), 1);
      // Held with its nonce mined: a person settles it.
      assert.equal((await ledger.settle(row.id, { state: 'waived', reason: 'reverted, paid by hand' }, 'ops')).outcome, 'settled');
    });

    it('when a token refund is mined without its Transfer log, then the row is held no-transfer-log (never sent again) with what its top-ups left; one with the log is refunded with the whole amount', async () => {
      await register(1);
      const TOKEN = '0x' + '70'.repeat(20);
      const token = { asset: `erc20:${TOKEN}`, amount: '5000000' };
      const silent = await due(1, 1, token);
      const call = { ...variant('refund', 1, '0'), to: TOKEN, data: '0xa9059cbb' + '00'.repeat(64), gas: '65000' };
      assert.equal(await payments.startPaying(await jobOf(1, silent), 0, REFUND_TO, call), true);
      const held = await payments.recordMined(await jobOf(1, silent), {
        hash: call.hash,
        block: 60,
        succeeded: true,
        noTransferLog: true,
        gasLeft: '7',
      });
      assert.deepEqual([held?.state, held?.holdReason, held?.refundBlock, held?.gasLeft], ['held', 'no-transfer-log', 60, '7']);
      assert.equal(held?.refundTxHash, undefined);
      assert.equal(held?.feesSpent, undefined, "a token refund's fee is never out of its amount");
      assert.equal(await noncesMined(1), 1);
      assert.equal((await payments.next(CHAIN, addressOf(1)))?.row.id, undefined, 'nothing left to send');

      const paid = await due(1, 2, token);
      const call2 = { ...call, hash: '0x' + '2'.padStart(64, '0') };
      assert.equal(await payments.startPaying(await jobOf(1, paid), 1, REFUND_TO, call2), true);
      const after = await payments.recordMined(await jobOf(1, paid), { hash: call2.hash, block: 61, succeeded: true, gasLeft: '9' });
      assert.deepEqual([after?.state, after?.refundValue, after?.gasLeft, after?.holdReason], ['refunded', '5000000', '9', undefined]);
    });

    it('when a cancel is mined for a row voided while paying, then it stays void with its block, and the nonce counts as mined; restored later, it is due at a new nonce', async () => {
      await register(1);
      const row = await due(1, 1);
      const v1 = variant('refund', 1);
      const cancel = variant('cancel', 2);
      assert.equal(await payments.startPaying(await jobOf(1, row), 0, REFUND_TO, v1), true);
      assert.deepEqual((await ledger.void([row.id], 'reorged')).voided, [row.id]);
      assert.equal(await payments.updateVariants([row.id], [v1], [v1, cancel]), true);
      const after = await payments.recordMined(await jobOf(1, row), { hash: cancel.hash, block: 61, succeeded: true });
      assert.ok(after);
      assert.equal(after.state, 'void');
      assert.equal(after.refundBlock, 61);
      assert.equal(after.refundTxHash, undefined);
      assert.equal(after.refundNonce, 0);
      assert.equal(await noncesMined(1), 1);
      assert.deepEqual(await payments.addressesToPay(CHAIN, 10), [], 'nothing left to watch or pay');
      // Its transfer read again: owed afresh, its cancelled nonce forgotten, and the next start takes the next nonce.
      assert.deepEqual(await ledger.restore([row.id]), [row.id]);
      const back = await ledger.get(row.id);
      assert.deepEqual([back?.state, back?.refundNonce, back?.refundVariants, back?.refundBlock], ['due', undefined, undefined, undefined]);
      assert.deepEqual(await payments.addressesToPay(CHAIN, 10), [addressOf(1)]);
      assert.equal(await payments.startPaying(await jobOf(1, back!), 0, REFUND_TO, variant('refund', 3)), false, 'nonce 0 is used');
      assert.equal(await payments.startPaying(await jobOf(1, back!), 1, REFUND_TO, variant('refund', 3)), true);
    });

    it('when a cancel is mined for a row restored to paying meanwhile, then it is due again with its nonce forgotten, and the next start takes the next nonce', async () => {
      await register(1);
      const row = await due(1, 1);
      const v1 = variant('refund', 1);
      const cancel = variant('cancel', 2);
      assert.equal(await payments.startPaying(await jobOf(1, row), 0, REFUND_TO, v1), true);
      await ledger.void([row.id], 'reorged');
      assert.equal(await payments.updateVariants([row.id], [v1], [v1, cancel]), true);
      assert.deepEqual(await ledger.restore([row.id]), [row.id]);
      assert.equal((await ledger.get(row.id))!.state, 'paying');
      const after = await payments.recordMined(await jobOf(1, row), { hash: cancel.hash, block: 70, succeeded: true });
      assert.ok(after);
      assert.equal(after.state, 'due');
      assert.equal(after.refundNonce, undefined);
      assert.equal(after.refundTo, undefined);
      assert.equal(after.refundVariants, undefined);
      assert.equal(after.refundBlock, undefined);
      assert.equal(await noncesMined(1), 1);
      assert.equal(await payments.startPaying(await jobOf(1, row), 0, REFUND_TO, variant('refund', 3)), false, 'nonce 0 is used');
      assert.equal(await payments.startPaying(await jobOf(1, row), 1, REFUND_TO, variant('refund', 3)), true);
      assert.equal((await ledger.get(row.id))!.refundNonce, 1);
    });

    it("when a row has a nonce not mined, then an operator's settlement writes nothing and answers paying, held at its fee cap too; once mined it is settled as usual", async () => {
      await register(1);
      const row = await due(1, 1);
      const v1 = variant('refund', 1);
      assert.equal(await payments.startPaying(await jobOf(1, row), 0, REFUND_TO, v1), true);
      const byHand = { state: 'refunded', txHash: '0x' + '77'.repeat(32) } as const;
      const paying = await ledger.settle(row.id, byHand, 'ops');
      assert.equal(paying.outcome, 'paying');
      assert.equal((await ledger.get(row.id))!.state, 'paying');

      assert.equal(await payments.holdInFlight([row.id], 'fee-cap'), 1);
      assert.equal(await payments.holdInFlight([row.id], 'fee-cap'), 0, 'held already');
      const held = (await ledger.get(row.id))!;
      assert.equal(held.state, 'held');
      assert.equal(held.holdReason, 'fee-cap');
      assert.equal((await ledger.settle(row.id, { state: 'waived', reason: 'x' }, 'ops')).outcome, 'paying');
      assert.equal((await ledger.settle(row.id, byHand, 'ops')).outcome, 'paying');
      const still = (await ledger.get(row.id))!;
      assert.equal(still.state, 'held');
      assert.equal(still.settledAt, undefined);
      assert.equal(still.refundTxHash, undefined);

      // Its variant mined after all: paid by the service, and a person has nothing left to settle.
      const mined = await payments.recordMined(await jobOf(1, row), { hash: v1.hash, block: 80, succeeded: true });
      assert.equal(mined?.state, 'refunded');
      assert.equal(mined?.holdReason, undefined, 'a refunded row is held no more');
      assert.equal((await ledger.settle(row.id, byHand, 'ops')).outcome, 'conflict');
    });

    it("when a transaction the ledger did not sign took a row's refund nonce, then a waiver by hand is refused (nonce-taken, nothing written) and only a settlement with the transaction that paid it back is taken", async () => {
      await register(1);
      const row = await due(1, 1);
      assert.equal(await payments.startPaying(await jobOf(1, row), 0, REFUND_TO, variant('refund', 1)), true);
      assert.equal(await payments.recordNonceUsedElsewhere(await jobOf(1, row), 9), true);
      const taken = (await ledger.get(row.id))!;
      assert.deepEqual([taken.state, taken.holdReason, taken.refundNonce, taken.refundTxHash], ['held', 'nonce-mismatch', 0, undefined]);
      const waived = await ledger.settle(row.id, { state: 'waived', reason: 'looks gone' }, 'ops');
      assert.equal(waived.outcome, 'nonce-taken');
      assert.equal((await ledger.get(row.id))?.state, 'held', 'nothing written');
      const paidBy = '0x' + '77'.repeat(32);
      const refunded = await ledger.settle(row.id, { state: 'refunded', txHash: paidBy }, 'ops');
      assert.equal(refunded.outcome, 'settled');
      assert.equal((await ledger.get(row.id))?.refundTxHash, paidBy);
      // A row held nonce-mismatch before anything was signed for it (the address stopped) may still be waived.
      const stopped = await due(1, 2);
      assert.equal(await payments.holdAddress((await jobOf(1, stopped)).source, 'nonce-mismatch'), 1);
      assert.equal((await ledger.settle(stopped.id, { state: 'waived', reason: 'dust' }, 'ops')).outcome, 'settled');
    });

    it('when unpayable rows are held, then rows without a chain, an amount or a deposit address are held off-chain and the others stay due', async () => {
      await register(1);
      const payable = await due(1, 1);
      const noChain = await due(1, 2, { chain: undefined });
      const noAmount = await due(1, 3, { amount: undefined });
      const noAddress = await due(9, 4);
      const otherChain = await due(1, 5, { chain: 'evm:1' });
      const alreadyHeld = await due(9, 6, { holdReason: 'too-small', transfers: 3 });
      assert.equal(await payments.holdUnpayable(), 4);
      for (const r of [noChain, noAmount, noAddress, otherChain]) {
        const after = (await ledger.get(r.id))!;
        assert.equal(after.state, 'held', r.txHash);
        assert.equal(after.holdReason, 'off-chain', r.txHash);
      }
      assert.equal((await ledger.get(payable.id))!.state, 'due');
      assert.equal((await ledger.get(payable.id))!.holdReason, undefined);
      assert.equal((await ledger.get(alreadyHeld.id))!.holdReason, 'too-small', 'a row held already keeps its reason');
      assert.equal(await payments.holdUnpayable(), 0);
    });

    it('when addresses to pay are listed, then those with a due row or a nonce not mined come, oldest row first; those with only held, refunded or void rows do not', async () => {
      for (const n of [1, 2, 3, 4, 5, 6]) await register(n);
      const inFlight = await due(2, 1); // oldest: address 2 pays it
      await due(1, 2); // address 1: due
      const held = await due(3, 3);
      const refunded = await due(4, 4);
      const heldInFlight = await due(5, 5);
      const voided = await due(6, 6);
      await due(9, 7); // no deposit address
      await due(1, 8, { chain: 'evm:1' }); // another chain
      assert.equal(await payments.startPaying(await jobOf(2, inFlight), 0, REFUND_TO, variant('refund', 1)), true);
      assert.equal(await payments.hold(held.id, 'contract-payer'), true);
      const v4 = variant('refund', 4);
      assert.equal(await payments.startPaying(await jobOf(4, refunded), 0, REFUND_TO, v4), true);
      assert.ok(await payments.recordMined(await jobOf(4, refunded), { hash: v4.hash, block: 5, succeeded: true }));
      assert.equal(await payments.startPaying(await jobOf(5, heldInFlight), 0, REFUND_TO, variant('refund', 5)), true);
      assert.equal(await payments.holdInFlight([heldInFlight.id], 'fee-cap'), 1);
      await ledger.void([voided.id], 'reorged');

      // One sweep time for all: the addresses handed out at the same time take turns oldest row first.
      const at = new Date(clock);
      assert.deepEqual(await payments.addressesToPay(CHAIN, 10, true, at), [addressOf(2), addressOf(1), addressOf(5)]);
      assert.deepEqual(await payments.addressesToPay(CHAIN, 2, true, at), [addressOf(2), addressOf(1)]);
      assert.deepEqual(await payments.addressesToPay(CHAIN, 10, false, at), [addressOf(2), addressOf(5)], 'not signing: only nonces out');
      assert.deepEqual(await payments.addressesToPay('evm:1', 10, true, at), [], 'no deposit address on that chain');
    });

    it('when N addresses stay to pay sweep after sweep (their refunds wait) and a new one comes, then the new one is handed out within ⌈(N + 1) / size⌉ sweeps, and every address at least once in every such span', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 40 }),
          fc.integer({ min: 1, max: 12 }),
          fc.integer({ min: 0, max: 5 }),
          async (stuck, size, before) => {
            await database.db.deleteFrom('refunds').execute();
            await database.db.deleteFrom('deposit_addresses').execute();
            let sweepAt = Date.parse('2026-03-01T00:00:00.000Z');
            const sweep = () => payments.addressesToPay(CHAIN, size, true, new Date((sweepAt += 5_000)));
            for (let n = 1; n <= stuck; n++) {
              await register(n);
              await due(n, n);
            }
            // The stuck addresses have been swept a few times already: they were handed out, and their rows are still due.
            for (let i = 0; i < before; i++) await sweep();
            const newcomer = stuck + 1;
            await register(newcomer);
            await due(newcomer, newcomer);
            const span = Math.ceil((stuck + 1) / size);
            const seen = new Map<string, number>();
            for (let i = 0; i < span; i++) for (const a of await sweep()) seen.set(a, (seen.get(a) ?? 0) + 1);
            assert.ok(seen.has(addressOf(newcomer)), `the newcomer was not handed out within ${span} sweeps of ${size}`);
            for (let n = 1; n <= newcomer; n++) assert.ok(seen.has(addressOf(n)), `address ${n} was not handed out within ${span} sweeps`);
          },
        ),
        { numRuns: 25 },
      );
    });

    it('when the next row of an address is asked for, then the one with a transaction out comes before older due rows; else the oldest due row; none when nothing is left', async () => {
      await register(1);
      assert.equal(await payments.next(CHAIN, addressOf(1)), undefined);
      assert.equal(await payments.next(CHAIN, addressOf(2)), undefined, 'not a deposit address');
      const older = await due(1, 1);
      const newer = await due(1, 2);
      const first = await payments.next(CHAIN, addressOf(1).toUpperCase().replace('0X', '0x'));
      assert.equal(first?.row.id, older.id);
      assert.deepEqual(first?.source, {
        chain: CHAIN,
        address: addressOf(1),
        workflowId: workflowOf(1),
        noncesMined: 0,
        derivation: 'bip32-v1',
      });
      assert.equal(await payments.startPaying(await jobOf(1, newer), 0, REFUND_TO, variant('refund', 2)), true);
      assert.equal((await payments.next(CHAIN, addressOf(1)))?.row.id, newer.id, 'the row in flight first');
      assert.equal(await payments.holdInFlight([newer.id], 'fee-cap'), 1);
      assert.equal((await payments.next(CHAIN, addressOf(1)))?.row.id, newer.id, 'held at its fee cap, still in flight');
      assert.ok(await payments.recordMined(await jobOf(1, newer), { hash: variant('refund', 2).hash, block: 3, succeeded: true }));
      assert.equal((await payments.next(CHAIN, addressOf(1)))?.row.id, older.id);
      assert.equal(await payments.hold(older.id, 'above-limit'), true);
      assert.equal(await payments.next(CHAIN, addressOf(1)), undefined);
    });

    it('when a row is written void from the start (its transfer reorganised away before its execution closed), then it is not to pay, nothing is announced, and a restore makes it due and announced', async () => {
      await register(1);
      const gone = await due(1, 1, { voidReason: 'reorged' });
      assert.equal(gone.state, 'void');
      assert.equal(gone.voidReason, 'reorged');
      assert.ok(gone.voidedAt);
      assert.deepEqual(await payments.addressesToPay(CHAIN, 10), []);
      assert.equal(await payments.next(CHAIN, addressOf(1)), undefined);
      assert.deepEqual(await ledger.unannounced(10), [], 'owed to nobody: no refund.due, no refund.voided');
      assert.deepEqual(await ledger.restore([gone.id]), [gone.id]);
      assert.equal((await ledger.get(gone.id))?.state, 'due');
      assert.deepEqual(
        (await ledger.unannounced(10)).map((r) => [r.id, r.event % 2]),
        [[gone.id, 1]],
        'mined again: its refund.due goes out',
      );
    });

    it('when the ledger judges a row dust as it is written, then it is held too-small with nothing to announce (no refund.due, no refund.held) and no address to pay; a row the judge passes is due and announced', async () => {
      await register(1);
      const judged = new RefundLedger(database, async (d) => (BigInt(d.amount ?? '0') < 1000n ? 'too-small' : undefined));
      const write = (tx: string, amount: string) =>
        judged.recordDue({
          wallet: 'w',
          executionId: 'refund-1',
          workflowId: workflowOf(1),
          chain: CHAIN,
          transferIndex: 0,
          asset: 'native',
          txHash: '0x' + tx.repeat(32),
          amount,
          reason: 'closed',
          reportedBy: 'chain-watcher',
        });
      const dustId = await write('01', '1');
      const owedId = await write('02', '5000');
      assert.deepEqual([(await ledger.get(dustId))?.state, (await ledger.get(dustId))?.holdReason], ['held', 'too-small']);
      assert.equal((await ledger.get(owedId))?.state, 'due');
      assert.deepEqual(
        (await ledger.unannounced(10)).map((r) => r.id),
        [owedId],
        'only the owed row has a refund.due to send',
      );
      assert.deepEqual(await ledger.unannouncedHeld(10), [], 'dust is announced to nobody');
      assert.deepEqual(await payments.addressesToPay(CHAIN, 10), [addressOf(1)]);
      await ledger.settle(owedId, { state: 'waived', reason: 'test' }, 'ops');
      assert.deepEqual(await payments.addressesToPay(CHAIN, 10), [], 'dust starts no refund workflow');
    });

    it('when a void row is restored, then it goes back where it was: paying with a nonce out, held with its reason, refunded with a refund transaction, else due', async () => {
      for (const n of [1, 2, 3, 4]) await register(n);
      const paying = await due(1, 1);
      assert.equal(await payments.startPaying(await jobOf(1, paying), 0, REFUND_TO, variant('refund', 1)), true);
      const held = await due(2, 2);
      assert.equal(await payments.hold(held.id, 'contract-payer'), true);
      const refunded = await due(3, 3);
      const plain = await due(4, 4);
      const ids = [paying.id, held.id, refunded.id, plain.id];
      assert.deepEqual((await ledger.void(ids, 'reorged')).voided.sort(), [...ids].sort());
      // A refund transaction recorded on a void row (none of the service's updates writes one there, so by hand).
      await database.db
        .updateTable('refunds')
        .set({ refund_tx_hash: '0x' + '55'.repeat(32) })
        .where('id', '=', refunded.id)
        .execute();

      assert.deepEqual((await ledger.restore(ids)).sort(), [...ids].sort());
      const after = async (id: string) => (await ledger.get(id))!;
      assert.equal((await after(paying.id)).state, 'paying');
      assert.equal((await after(paying.id)).refundNonce, 0);
      assert.equal((await after(held.id)).state, 'held');
      assert.equal((await after(held.id)).holdReason, 'contract-payer');
      assert.equal((await after(refunded.id)).state, 'refunded');
      assert.equal((await after(plain.id)).state, 'due');
      for (const id of ids) {
        assert.equal((await after(id)).voidedAt, undefined);
        assert.equal((await after(id)).voidReason, undefined);
      }
      assert.deepEqual(await ledger.restore(ids), [], 'restored once');
    });
  });
}
