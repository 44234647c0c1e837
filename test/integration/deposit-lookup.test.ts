import assert from 'node:assert/strict';
import type { Address, Hash } from 'viem';
import { IntentClient, IntentServiceError } from '@intent-service/client';
import { buildOpenApiDocument } from '../../api/operations/openapi';
import { loadConfig } from '../../config/config';
import { TestChain } from '../support/chain';
import { eventually } from '../support/executions';
import { depositHelpers, startFollowingStack, type PreparedDeposit } from '../support/deposit-helpers';
import { request, type HttpAnswer } from '../support/http';
import { answerChecker } from '../support/openapi-check';
import type { ProcessStack } from '../support/process-stack';

const CHAIN = 'evm:31337';
const CONFIRMATIONS = 3;
const ROUTE = '/api/v1/deposits/{chain}/{txHash}';
const ENTRY_FIELDS = ['chain', 'txHash', 'transferIndex', 'asset', 'amount', 'wallet', 'executionId', 'status', 'outcome', 'refund'];

/**
 * The deposit lookup end to end: a depositor who knows only their transaction asks what became of
 * it, without a token. A real anvil chain (automine off), a real Temporal dev server, the worker
 * and the API as real processes; the refunder is off (the stack's default), so owed rows stay due.
 */
describe('deposit lookup: what became of a transaction, on a real anvil chain', function () {
  this.timeout(180_000);
  let chain: TestChain;
  let stack: ProcessStack;
  let tusd: Address;
  let sprayer: Address;
  const check = answerChecker(buildOpenApiDocument(loadConfig({})) as Parameters<typeof answerChecker>[0]);

  before(async function () {
    this.timeout(180_000);
    chain = await TestChain.start();
    tusd = await chain.deployToken('Test USD', 'tUSD');
    sprayer = await chain.deploySprayer();
    await chain.sendToken(tusd, sprayer, 10n ** 12n);
    await chain.mine(1);
    stack = await startFollowingStack(chain, CHAIN, CONFIRMATIONS, { DEPOSIT_TOKENS: `${CHAIN}:${tusd}=tUSD:6` });
  });
  after(async () => {
    await stack?.stop();
    await chain?.stop();
  });

  const { operationPending, ...deposits } = depositHelpers(
    () => stack,
    () => chain,
    CHAIN,
  );

  /** The lookup without a token, its answer checked against the OpenAPI document. */
  async function lookup(txHash: string, chainId = CHAIN): Promise<HttpAnswer> {
    const res = await request(stack.apiUrl, 'GET', `/api/v1/deposits/${chainId}/${txHash}`);
    if (res.status === 200 || res.status === 404 || res.status === 400) check(ROUTE, 'GET', res.status, res.body);
    return res;
  }

  /** The lookup's entries once `done` holds for them. */
  const entriesOnce = (txHash: string, done: (entries: any[]) => boolean): Promise<any[]> =>
    eventually(async () => {
      const res = await lookup(txHash);
      return res.status === 200 && done(res.body.result) && (res.body.result as any[]);
    }, 30_000);

  let taken: PreparedDeposit;
  let takenTx: Hash;

  it("when a transfer is the execution's deposit, then the lookup answers it taken with the execution's status, in any case of the hash, and nothing else of the record; the SDK answers the same", async () => {
    taken = await deposits.prepare({ minAmount: '1000', idPrefix: 'lookup' });
    takenTx = await chain.send(taken.address, 5000n);
    await chain.mine(CONFIRMATIONS);
    await operationPending(taken, 30_000);

    const entries = await entriesOnce(takenTx, (e) => e.length === 1);
    assert.deepEqual(entries, [
      {
        chain: CHAIN,
        txHash: takenTx.toLowerCase(),
        transferIndex: 0,
        asset: 'native',
        amount: '5000',
        wallet: taken.wallet.id,
        executionId: taken.executionId,
        status: 'OPERATION_PENDING',
        outcome: 'taken',
      },
    ]);
    const upper = await lookup(`0x${takenTx.slice(2).toUpperCase()}`);
    assert.equal(upper.status, 200, upper.text);
    assert.deepEqual(upper.body.result, entries);
    assert.ok(!/intent|signedPayload|signerPublicKey/.test(upper.text), upper.text);

    const sdk = new IntentClient({ baseUrl: stack.apiUrl });
    assert.deepEqual(await sdk.depositStatus(CHAIN, takenTx), entries);
  });

  it('when a second transfer reaches the execution whose deposit was taken, then the lookup answers it owed, with its refunds ledger row due; the first stays taken', async () => {
    // Worth paying back: far above a refund's fee (4000 wei would be dust, held as it is written).
    const second = await chain.send(taken.address, 10n ** 16n);
    await chain.mine(CONFIRMATIONS);
    const [entry] = await entriesOnce(second, (e) => e.length === 1);
    assert.deepEqual(
      Object.keys(entry).filter((k) => !ENTRY_FIELDS.includes(k)),
      [],
    );
    assert.deepEqual(
      [entry.txHash, entry.transferIndex, entry.asset, entry.amount, entry.wallet, entry.executionId, entry.status, entry.outcome],
      [second.toLowerCase(), 0, 'native', String(10n ** 16n), taken.wallet.id, taken.executionId, 'OPERATION_PENDING', 'owed'],
    );
    assert.match(entry.refund.id, /^[0-9a-f]{32}$/);
    assert.deepEqual([entry.refund.state, entry.refund.reason], ['due', 'other-tx']);
    assert.equal((await lookup(takenTx)).body.result[0].outcome, 'taken');
  });

  it("when one transaction pays an execution twice (two token transfers), then the lookup answers both: the record's deposit taken, the other owed", async () => {
    const e = await deposits.prepare({ asset: `erc20:${tusd}`, minAmount: '1000000', idPrefix: 'lookup' });
    const tx = await chain.spray(sprayer, tusd, e.address, 1_000_000n, 2);
    await chain.mine(CONFIRMATIONS);
    const pending = await operationPending(e, 30_000);
    const entries = await entriesOnce(tx, (found) => found.length === 2);
    // Which of the two the execution took is the watcher's business; the lookup says which it was.
    const takenIndex = pending.deposit!.transferIndex!;
    assert.deepEqual(
      entries.map((x) => [x.transferIndex, x.asset, x.amount, x.executionId, x.status, x.outcome, x.refund?.reason]),
      [0, 1].map((index) => [
        index,
        `erc20:${tusd.toLowerCase()}`,
        '1000000',
        e.executionId,
        'OPERATION_PENDING',
        index === takenIndex ? 'taken' : 'owed',
        index === takenIndex ? undefined : 'other-tx',
      ]),
    );
  });

  it('when the transaction is unknown, then 404 with the error body (the SDK throws it); a malformed chain or txHash is 400', async () => {
    const unknown = `0x${'ab'.repeat(32)}`;
    const res = await lookup(unknown);
    assert.equal(res.status, 404, res.text);
    assert.match(res.body.error, /no transfer of transaction 0xabab/);
    await assert.rejects(new IntentClient({ baseUrl: stack.apiUrl }).depositStatus(CHAIN, unknown), (err: unknown) => {
      assert.ok(err instanceof IntentServiceError);
      assert.equal(err.status, 404);
      return true;
    });
    for (const [chainId, txHash] of [
      [CHAIN, '0x1234'],
      [CHAIN, `0x${'zz'.repeat(32)}`],
      ['eth:1', unknown],
      ['evm:01', unknown],
    ]) {
      const bad = await lookup(txHash!, chainId);
      assert.equal(bad.status, 400, `${chainId} ${txHash}: ${bad.text}`);
      assert.equal(typeof bad.body.error, 'string');
    }
  });
});
