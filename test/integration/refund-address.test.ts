import assert from 'node:assert/strict';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { openDatabase } from '../../db/database';
import { RefundPayments } from '../../db/refund-payments';
import { toChecksumAddress } from '../../domain/eoa';
import { TestChain } from '../support/chain';
import { newWallet, sampleIntent } from '../support/executions';
import { depositHelpers, startFollowingStack } from '../support/deposit-helpers';
import type { ProcessStack } from '../support/process-stack';

const CHAIN = 'evm:31337';
/** An account of the customer's (any 20 bytes), EIP-55 with letters in both cases. */
const BACK = toChecksumAddress('0x' + 'a1b2c3d4e5'.repeat(4));

/**
 * Prepare's deposit.refundAddress against real processes (a real anvil chain, Temporal dev server,
 * worker and API): kept on the record EIP-55 and on the deposit address lowercase; a wrong
 * checksum, a deposit address of the service and a change on a retried prepare are refused.
 */
describe("refund address: prepare's deposit.refundAddress, end to end", function () {
  this.timeout(120_000);
  let chain: TestChain;
  let stack: ProcessStack;

  before(async function () {
    this.timeout(180_000);
    chain = await TestChain.start();
    stack = await startFollowingStack(chain, CHAIN, 2);
  });
  after(async () => {
    await stack?.stop();
    await chain?.stop();
  });

  const { api, record, prepare } = depositHelpers(
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
});
