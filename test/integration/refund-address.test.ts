import assert from 'node:assert/strict';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { openDatabase } from '../../db/database';
import { RefundPayments } from '../../db/refund-payments';
import { toChecksumAddress } from '../../domain/eoa';
import { ANVIL_DEV_ACCOUNT } from '../../scripts/lib/anvil';
import { TestChain } from '../support/chain';
import type { Address } from 'viem';
import { nacl25519Signer, signRefundAddress } from '@intent-service/client';
import { cancelBody, newWallet, nowSeconds, sampleIntent, type TestWallet } from '../support/executions';
import { depositHelpers, refundsOf, startFollowingStack, type PreparedDeposit } from '../support/deposit-helpers';
import { request } from '../support/http';
import type { ProcessStack } from '../support/process-stack';

const CHAIN = 'evm:31337';
/** An account of the customer's (any 20 bytes), EIP-55 with letters in both cases. */
const BACK = toChecksumAddress('0x' + 'a1b2c3d4e5'.repeat(4));

/**
 * Prepare's deposit.refundAddress against real processes (a real anvil chain, Temporal dev server,
 * worker and API): kept on the record EIP-55 and on the deposit address lowercase; a wrong
 * checksum, a deposit address of the service and a change on a retried prepare are refused. And
 * the owner's signed command that sets where refunds of its own deposit and of its payer go.
 */
describe("refund address: prepare's deposit.refundAddress, end to end", function () {
  this.timeout(120_000);
  let chain: TestChain;
  let stack: ProcessStack;

  before(async function () {
    this.timeout(180_000);
    chain = await TestChain.start();
    // Refunds paid once six blocks deep: the owner's test mines its way there.
    stack = await startFollowingStack(chain, CHAIN, 2, { CHAIN_REORG_WINDOW: '6', REFUND_PAYMENTS: 'on' });
  });
  after(async () => {
    await stack?.stop();
    await chain?.stop();
  });

  const { api, record, prepare, operationPending } = depositHelpers(
    () => stack,
    () => chain,
    CHAIN,
  );

  /** A prepare body with a native deposit target and `refundAddress`. */
  const bodyWith = (refundAddress: string, executionId = `refund-address-${randomUUID()}`) => ({
    executionId,
    intent: sampleIntent(),
    deposit: { chain: CHAIN, asset: 'native', minAmount: '1000', refundAddress },
  });

  /** The refund address the read model holds for a deposit address (RefundPayments.source, as the refunder reads it). */
  async function storedRefundAddress(address: string): Promise<string | undefined> {
    const database = await openDatabase({ sqliteFile: path.join(stack.tmpDir, 'read-model.sqlite') });
    try {
      return (await new RefundPayments(database).source(CHAIN, address))?.refundAddress;
    } finally {
      await database.close();
    }
  }

  it('when prepare names a refundAddress (in EIP-55 or in lowercase), then the record shows it EIP-55 under depositTarget and the deposit address holds it lowercase; the same prepare again is a replay', async () => {
    for (const given of [BACK, BACK.toLowerCase()]) {
      const e = await prepare({ extra: { deposit: { chain: CHAIN, asset: 'native', minAmount: '1000', refundAddress: given } } });
      assert.equal((await record(e)).depositTarget?.refundAddress, BACK);
      assert.equal(await storedRefundAddress(e.address), BACK.toLowerCase());
      const again = await api('POST', `/api/v1/executions/${e.wallet.id}`, e.body);
      assert.equal(again.status, 200, again.text);
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      assert.equal(again.body.result.depositTarget.refundAddress, BACK);
    }
  });

  it('when the refundAddress fails its EIP-55 checksum, is no address, is the zero address or a precompile, or is a deposit address of the service (of another execution, or its own), then prepare is 400 and starts nothing', async () => {
    // Flip the case of its last letter: still 0x + 40 hex digits, no longer its checksum.
    let last = BACK.length - 1;
    while (!/[a-fA-F]/.test(BACK[last]!)) last--;
    const flipped = BACK[last] === BACK[last]!.toLowerCase() ? BACK[last]!.toUpperCase() : BACK[last]!.toLowerCase();
    const badChecksum = BACK.slice(0, last) + flipped + BACK.slice(last + 1);
    assert.equal(badChecksum.toLowerCase(), BACK.toLowerCase());
    assert.notEqual(badChecksum, BACK);
    const other = await prepare();
    const cases: Array<[string, RegExp]> = [
      [badChecksum, /deposit\.refundAddress mixed-case address fails its EIP-55 checksum/],
      ['0x1234', /refundAddress/],
      [`0x${'0'.repeat(40)}`, /deposit\.refundAddress is the zero address/],
      [`0x${'0'.repeat(38)}01`, /deposit\.refundAddress is a precompile address/],
      [`0x${'0'.repeat(38)}FF`, /deposit\.refundAddress is a precompile address/],
      [other.address, /deposit\.refundAddress is a deposit address of this service/],
      [other.address.toLowerCase(), /deposit\.refundAddress is a deposit address of this service/],
    ];
    for (const [refundAddress, message] of cases) {
      const wallet = newWallet();
      const body = bodyWith(refundAddress);
      const res = await api('POST', `/api/v1/executions/${wallet.id}`, body);
      assert.equal(res.status, 400, `${refundAddress}: ${res.text}`);
      assert.match(res.body.error, message);
      assert.equal((await api('GET', `/api/v1/executions/${wallet.id}/${body.executionId}`)).status, 404, 'nothing started');
    }
    // Its own deposit address: known once prepared; the same prepare naming it is refused before anything else.
    const own = await api('POST', `/api/v1/executions/${other.wallet.id}`, bodyWith(other.address, other.executionId));
    assert.equal(own.status, 400, own.text);
    assert.match(own.body.error, /deposit\.refundAddress is this execution's own deposit address/);
  });

  it('when a prepare is retried with another refundAddress, or without the one it named, then it is 409 like any other change and the record keeps the first', async () => {
    const e = await prepare({ extra: { deposit: { chain: CHAIN, asset: 'native', minAmount: '1000', refundAddress: BACK } } });
    const elsewhere = toChecksumAddress('0x' + '5f'.repeat(20));
    for (const deposit of [
      { chain: CHAIN, asset: 'native', minAmount: '1000', refundAddress: elsewhere },
      { chain: CHAIN, asset: 'native', minAmount: '1000' },
    ]) {
      const res = await api('POST', `/api/v1/executions/${e.wallet.id}`, { ...e.body, deposit });
      assert.equal(res.status, 409, res.text);
      assert.match(res.body.error, /already exists with other content/);
    }
    assert.equal((await record(e)).depositTarget?.refundAddress, BACK);
    assert.equal(await storedRefundAddress(e.address), BACK.toLowerCase());
  });

  /** The owner's command for `e`, signed by `secretKey` (the wallet's own by default). */
  const ownerCommand = (e: PreparedDeposit, refundAddress: string, timestamp: number, secretKey: Uint8Array = e.wallet.secretKey) =>
    signRefundAddress(nacl25519Signer(secretKey), {
      wallet: e.wallet.id,
      executionId: e.executionId,
      domain: 'localhost',
      refundAddress,
      timestamp,
    });
  const setRefundAddress = async (e: PreparedDeposit, body: unknown) =>
    request(stack.apiUrl, 'POST', `/api/v1/executions/${e.wallet.id}/${e.executionId}/refund-address`, { json: body });

  /** Mines a block every 200 ms until `done` answers something, within 90 s; `e`'s ledger rows name what was reached instead. */
  async function miningUntil<T>(e: PreparedDeposit, done: () => Promise<T | undefined>): Promise<T> {
    const deadline = Date.now() + 90_000;
    for (;;) {
      const found = await done();
      if (found !== undefined) return found;
      if (Date.now() > deadline) throw new Error(`not reached while mining; the rows: ${JSON.stringify(await refundsOf(stack, e))}`);
      await chain.mine(1);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  it("when the owner signs a refund address, then its cancelled deposit (held: paid through a contract) and its payer's later transfer are paid there, a stranger's transfer goes back to the stranger, and a replayed, older or foreign command changes nothing", async () => {
    const forwarder = await chain.deployForwarder();
    const e = await prepare({ minAmount: (10n ** 16n).toString(), idPrefix: 'owner-refund' });
    const deposit = await chain.sendThrough(forwarder, e.address, 10n ** 17n);
    await chain.mine(2);
    await operationPending(e, 60_000);
    assert.equal(
      (await api('POST', `/api/v1/executions/${e.wallet.id}/${e.executionId}/cancel`, cancelBody(e.wallet, e.executionId))).status,
      200,
    );
    const held = await miningUntil(e, async () => {
      const row = (await refundsOf(stack, e)).find((r) => r.txHash === deposit.toLowerCase());
      return row?.state === 'held' ? row : undefined;
    });
    assert.ok(['contract-payer', 'no-destination'].includes(held.holdReason!), held.holdReason);

    const mine = toChecksumAddress(`0x${randomUUID().replace(/-/g, '')}${'7'.repeat(8)}`);
    const t0 = nowSeconds() - 10;
    const other: TestWallet = newWallet();
    const foreign = await setRefundAddress(e, await ownerCommand(e, mine, t0, other.secretKey));
    assert.equal(foreign.status, 400, foreign.text);
    assert.match(foreign.body.error, /not the signer key/);

    const command = await ownerCommand(e, mine, t0);
    const set = await setRefundAddress(e, command);
    assert.equal(set.status, 200, set.text);
    assert.equal(set.body.result.refundAddress, mine);
    assert.equal(set.body.result.txHash, deposit.toLowerCase());
    assert.equal(set.body.result.payer, forwarder.toLowerCase());
    const replayed = await setRefundAddress(e, command);
    assert.equal(replayed.status, 200, replayed.text);
    assert.deepEqual(replayed.body, set.body, 'the same command again: answered, nothing written');
    const older = await setRefundAddress(e, await ownerCommand(e, BACK, t0 - 1));
    assert.equal(older.status, 409, older.text);
    assert.equal(older.body.code, 'REFUND_ADDRESS_STALE');
    assert.equal((await record(e)).ownerRefundAddress?.refundAddress, mine);

    // After the command: the same payer (the forwarder) pays again, and a stranger (an EOA) pays too.
    const again = await chain.sendThrough(forwarder, e.address, 10n ** 16n);
    const stranger = await chain.send(e.address, 10n ** 16n);
    const paid = await miningUntil(e, async () => {
      const rows = await refundsOf(stack, e);
      const of = (tx: string) => rows.find((r) => r.txHash === tx.toLowerCase());
      const all = [of(deposit), of(again), of(stranger)];
      return all.every((r) => r?.state === 'refunded') ? all : undefined;
    });
    assert.deepEqual(
      paid.map((r) => r!.refundTo),
      [mine.toLowerCase(), mine.toLowerCase(), (ANVIL_DEV_ACCOUNT.address as Address).toLowerCase()],
    );
    const page = await request(stack.apiUrl, 'GET', `/status/${e.wallet.id}/${e.executionId}`);
    assert.match(page.text, new RegExp(`data-owner-refund="${mine}"`));
    const late = await setRefundAddress(e, await ownerCommand(e, BACK, nowSeconds()));
    assert.equal(late.status, 200, 'a newer command, no refund paying: it applies to what is still to pay');
  });
});
