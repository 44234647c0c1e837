import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openDatabase, type Database } from '../../db/database';
import { DepositAddressStore } from '../../db/deposit-addresses';
import { GasAccountLedger, type NewTopUp, type TopUpVariant } from '../../db/gas-account';
import { postgresBinDir, startThrowawayPostgres, type ThrowawayPostgres } from '../support/postgres';

const CHAIN = 'evm:31337';
const GAS = '0x' + 'aa'.repeat(20);
const DEPOSIT = '0x' + '0d'.repeat(20);

/** A signed top-up `n`, as the refunder keeps it. */
const variant = (n: number): TopUpVariant => ({
  hash: '0x' + n.toString(16).padStart(64, '0'),
  raw: '0x02' + n.toString(16).padStart(8, '0'),
  to: DEPOSIT,
  value: '1000',
  gas: '21000',
  maxFeePerGas: '2000000000',
  maxPriorityFeePerGas: '1000000000',
  signedAt: '2026-03-01T00:00:00.000Z',
});

const topUp = (nonce: number, refundId: string, n = nonce): NewTopUp => ({
  chain: CHAIN,
  account: GAS,
  nonce,
  refundId,
  to: DEPOSIT,
  value: 1000n,
  variant: variant(n),
});

/** The same tests on both engines of the read model: SQLite (npm start) and PostgreSQL (DATABASE_URL). */
for (const kind of ['sqlite', 'postgres'] as const) {
  describe(`db: the gas account's top-ups on ${kind === 'sqlite' ? 'SQLite' : 'PostgreSQL (a throwaway server)'}`, function () {
    this.timeout(60_000);
    let tmp: string;
    let pg: ThrowawayPostgres | undefined;
    let database: Database;
    let gas: GasAccountLedger;

    before(async function () {
      tmp = mkdtempSync(path.join(os.tmpdir(), 'intent-service-gas-account-'));
      let settings: { url?: string; sqliteFile: string } = { sqliteFile: path.join(tmp, 'read-model.sqlite') };
      if (kind === 'postgres') {
        if (!postgresBinDir()) {
          console.warn(
            '    PostgreSQL server binaries are not installed (pg_config --bindir): the PostgreSQL gas account tests are skipped',
          );
          this.skip();
        }
        pg = await startThrowawayPostgres();
        settings = { ...settings, url: pg.url };
      }
      database = await openDatabase(settings);
      gas = new GasAccountLedger(database);
    });
    after(async () => {
      await database?.close();
      await pg?.stop();
      if (tmp) rmSync(tmp, { recursive: true, force: true });
    });
    beforeEach(async () => {
      await database.db.deleteFrom('gas_topups').execute();
      await database.db.deleteFrom('gas_accounts').execute();
    });

    it('when a gas account is registered twice, then the first count stays; its address is then one the service pays from, never a depositor', async () => {
      assert.equal(await gas.register(CHAIN, GAS.toUpperCase().replace('0X', '0x'), 3), 3);
      assert.equal(await gas.register(CHAIN, GAS, 7), 3);
      const store = new DepositAddressStore(database);
      assert.deepEqual([...(await store.servicePayers(CHAIN, [GAS, DEPOSIT]))], [GAS]);
      assert.equal((await store.servicePayers('evm:1', [GAS])).size, 0, 'per chain');
    });

    it('when ten workers sign the next top-up at once, then exactly one is written; none at a nonce that is not the next, none for a refund with one out, none past the bound', async () => {
      await gas.register(CHAIN, GAS, 0);
      const wins = await Promise.all(Array.from({ length: 10 }, (_, i) => gas.start(topUp(0, `row-${i}`, i + 1), 3)));
      assert.equal(wins.filter(Boolean).length, 1);
      const [flying] = await gas.sending(CHAIN, GAS);
      assert.equal(flying?.nonce, 0);
      assert.equal(await gas.start(topUp(0, 'row-y', 50), 3), false, 'the same nonce again');
      assert.equal(await gas.start(topUp(2, 'row-y'), 3), false, 'a nonce left out: the next is 1');
      assert.equal(await gas.start(topUp(1, flying.refundId, 60), 3), false, 'the same refund has one out');
      assert.equal(await gas.start(topUp(1, 'row-y'), 3), true, 'another refund at the next nonce, while the first is out');
      assert.equal(await gas.start(topUp(2, 'row-z'), 3), true);
      assert.equal(await gas.start(topUp(3, 'row-w'), 3), false, 'three out: the bound');
      assert.deepEqual(
        (await gas.sending(CHAIN, GAS)).map((t) => t.nonce),
        [0, 1, 2],
      );
    });

    it('when workers race to sign the next top-ups while others are recorded mined, then the nonces written are consecutive from the count, each once, and never more out than the bound', async () => {
      await gas.register(CHAIN, GAS, 0);
      let refund = 0;
      for (let round = 0; round < 6; round++) {
        const counted = (await gas.accounts())[0].noncesMined;
        const out = await gas.sending(CHAIN, GAS);
        const next = counted + out.length;
        // Four workers try the next two nonces for new refunds while the lowest one out is recorded mined.
        const tries = [next, next, next + 1, next + 1].map((n) => gas.start(topUp(n, `row-${refund++}`, refund), 3));
        const mined = out[0] ? gas.recordMined(out[0], { hash: out[0].variants[0].hash, block: round, fee: '21' }) : Promise.resolve(false);
        await Promise.all([...tries, mined]);
        const now = await gas.sending(CHAIN, GAS);
        assert.ok(now.length <= 3, `${now.length} out`);
        const all = await database.db.selectFrom('gas_topups').select(['nonce']).orderBy('nonce').execute();
        assert.deepEqual(
          all.map((r) => Number(r.nonce)),
          all.map((_, i) => i),
          'consecutive nonces, each once',
        );
      }
    });

    it('when a top-up is mined and two workers record it at once, then the count rises once and the row it paid counts it; the next nonce may then be signed', async () => {
      await gas.register(CHAIN, GAS, 4);
      assert.ok(await gas.start(topUp(4, 'row-a'), 1));
      const [flying] = await gas.sending(CHAIN, GAS);
      assert.equal(await gas.toppedUp('row-a'), 0n, 'nothing counts before it is mined');
      const recorded = await Promise.all([1, 2].map(() => gas.recordMined(flying, { hash: flying.variants[0].hash, block: 9, fee: '21' })));
      assert.deepEqual(recorded.sort(), [false, true]);
      assert.equal((await gas.accounts())[0].noncesMined, 5);
      assert.equal(await gas.toppedUp('row-a'), 1000n);
      assert.deepEqual(await gas.sending(CHAIN, GAS), []);
      assert.ok(await gas.start(topUp(5, 'row-a'), 1));
      await assert.rejects(gas.recordMined(flying, { hash: '0x' + 'ff'.repeat(32), block: 9, fee: '1' }), /not a variant/);
    });

    it('when a replacement is appended, then only over the variants the caller read; a lost top-up frees the account, whose count then follows the chain once', async () => {
      await gas.register(CHAIN, GAS, 0);
      assert.ok(await gas.start(topUp(0, 'row-a'), 1));
      const [flying] = await gas.sending(CHAIN, GAS);
      assert.ok(await gas.updateVariants(flying.id, flying.variants, [...flying.variants, variant(2)]));
      assert.equal(await gas.updateVariants(flying.id, flying.variants, [...flying.variants, variant(3)]), false, 'read before the first');
      assert.equal(await gas.resync(CHAIN, GAS, 0, 2), false, 'not while a top-up is being sent');
      assert.ok(await gas.recordLost((await gas.sending(CHAIN, GAS))[0]));
      assert.equal(await gas.toppedUp('row-a'), 0n, 'a lost top-up paid nothing');
      assert.ok(await gas.resync(CHAIN, GAS, 0, 2));
      assert.equal(await gas.resync(CHAIN, GAS, 0, 3), false, 'from a count it no longer has');
      assert.equal((await gas.accounts())[0].noncesMined, 2);
      assert.equal((await gas.ofRefund('row-a'))[0].state, 'lost');
    });
  });
}
