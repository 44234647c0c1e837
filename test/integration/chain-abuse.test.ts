import assert from 'node:assert/strict';
import type { Address } from 'viem';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import { chainWatcherWorkflowId, executionWorkflowId } from '../../contracts/temporal';
import { TestChain } from '../support/chain';
import { depositHelpers, refundsOf as refundsOfExecution, startFollowingStack, type PreparedDeposit } from '../support/deposit-helpers';
import { eventually, signedBody } from '../support/executions';
import { request } from '../support/http';
import { freePort } from '../support/ports';
import { metricSum, scrape } from '../support/prometheus';
import { ProcessStack } from '../support/process-stack';

const CHAIN = 'evm:31337';
const CONFIRMATIONS = 3;
const WINDOW = 16;
/** The flood's size: 10,000 transfers in five blocks take a few seconds here. */
const FLOOD = 10_000;

/**
 * The deposit path as an attacker and a flaky chain see it, end to end: a real anvil chain
 * (automine off), a real Temporal dev server, the worker and the API as real processes (the
 * worker is restarted, the chain watcher terminated), real HTTP. Every ledger row must be money
 * the chain shows: a flood of worthless transfers does not blind the watcher nor become a row each,
 * a reorganisation takes owed money out of `due` and its re-inclusion brings it back, and a
 * watcher that was gone resumes where it was, never at the head.
 */
describe('the deposit path attacked: floods, reorganisations and a watcher gone, on a real anvil chain', function () {
  this.timeout(300_000);
  let chain: TestChain;
  let stack: ProcessStack;
  let metricsUrl: string;
  let tusd: Address;
  let sprayer: Address;
  const watcherId = chainWatcherWorkflowId(CHAIN);

  before(async function () {
    this.timeout(180_000);
    chain = await TestChain.start();
    tusd = await chain.deployToken('Test USD', 'tUSD');
    sprayer = await chain.deploySprayer();
    await chain.sendToken(tusd, sprayer, 10n ** 12n);
    await chain.mine(1);
    const metricsPort = await freePort();
    metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    stack = await startFollowingStack(chain, CHAIN, CONFIRMATIONS, {
      DEPOSIT_TOKENS: `${CHAIN}:${tusd}=tUSD:6`,
      CHAIN_REORG_WINDOW: String(WINDOW),
      EXECUTION_LINGER_S: '1',
      WORKER_METRICS_PORT: String(metricsPort),
    });
  });
  after(async () => {
    await stack?.stop();
    await chain?.stop();
  });

  const { watcher, record, recordIfReadable, operationPending, ...deposits } = depositHelpers(
    () => stack,
    () => chain,
    CHAIN,
  );
  const workflowIdOf = (e: PreparedDeposit) => executionWorkflowId(e.wallet.id, e.executionId);
  const refundsOf = (e: PreparedDeposit) => refundsOfExecution(stack, e);
  const metric = async (name: string) => metricSum(await scrape(metricsUrl), name, { chain: CHAIN });

  it(`when ${FLOOD} token transfers of 1 unit and 500 of 0 reach one deposit address in a few blocks, then a deposit to another execution in the next block reaches OPERATION_PENDING within a minute, every round's answer stays far below the payload limit, and the flood is one held row per block`, async () => {
    const victim = await deposits.prepare({ asset: `erc20:${tusd}`, minAmount: '1000000', idPrefix: 'flood' });
    const other = await deposits.prepare({ minAmount: '1000', idPrefix: 'flood' });
    const perTx = 2_000;
    let blocks = 0;
    for (let sent = 0; sent < FLOOD; sent += perTx) {
      await chain.spray(sprayer, tusd, victim.address, 1n, Math.min(perTx, FLOOD - sent));
      await chain.mine(1);
      blocks++;
    }
    await chain.spray(sprayer, tusd, victim.address, 0n, 500);
    await chain.mine(1);
    const deposit = await chain.send(other.address, 1000n);
    await chain.mine(CONFIRMATIONS);
    const funded = await operationPending(other, 60_000);
    assert.equal(funded.deposit?.txHash, deposit);

    const rows = await eventually(async () => {
      const found = await refundsOf(victim);
      return found.length === blocks && found;
    }, 60_000);
    assert.equal(
      rows.reduce((n, r) => n + (r.transfers ?? 1), 0),
      FLOOD,
    );
    assert.equal(
      rows.reduce((n, r) => n + BigInt(r.amount ?? '0'), 0n),
      BigInt(FLOOD),
    );
    assert.ok(rows.every((r) => r.holdReason === 'too-small' && r.reason === 'below-minimum' && r.state === 'held'));
    const victimRecord = await record(victim);
    assert.equal(victimRecord.status, 'PREPARED');
    assert.deepEqual(victimRecord.refusedDeposits, []);

    // Every run of the watcher: no activity answer near Temporal's 2 MiB payload limit.
    let largest = 0;
    for await (const run of stack.client.workflow.list({ query: `WorkflowId = '${watcherId}'` })) {
      const history = await stack.client.workflow.getHandle(watcherId, run.runId).fetchHistory();
      for (const ev of history.events ?? [])
        for (const p of ev.activityTaskCompletedEventAttributes?.result?.payloads ?? []) largest = Math.max(largest, p.data?.length ?? 0);
    }
    assert.ok(largest > 0, 'no activity answer was read');
    assert.ok(largest < 256 * 1024, `an activity answered ${largest} bytes`);
  });

  it('when an owed transfer to a closed execution and a SIGNING execution’s own deposit are reorganised away, then the row is void and the record flagged; when the same transfers are mined again, the row is due again and the flag gone', async () => {
    const closed = await deposits.prepare({ minAmount: '1000', extra: { ttlSeconds: 1 }, idPrefix: 'reorg' });
    await stack.client.workflow.getHandle(workflowIdOf(closed)).result();
    const signing = await deposits.prepare({ minAmount: '1000', idPrefix: 'reorg' });
    const key = generatePrivateKey();
    await chain.send(privateKeyToAddress(key), 10n ** 18n);
    await chain.mine(1);
    const voidedBefore = await metric('intent_refunds_voided_total');
    const signingBefore = await metric('intent_chain_signing_without_deposit_total');

    const snapshot = await chain.snapshot();
    // Worth paying back (a row far below a refund's fee would be dust, held as it is written).
    const owed = 10n ** 16n;
    const toClosed = await chain.signedTransfer(key, closed.address, owed);
    await chain.sendRaw(toClosed);
    const toSigning = await chain.signedTransfer(key, signing.address, 2000n);
    const depositTx = await chain.sendRaw(toSigning);
    await chain.mine(CONFIRMATIONS);
    const [row] = await eventually(async () => {
      const found = await refundsOf(closed);
      return found.length === 1 && found;
    }, 30_000);
    assert.deepEqual([row.amount, row.state, row.reason], [String(owed), 'due', 'expired']);
    assert.equal((await operationPending(signing, 30_000)).deposit?.txHash, depositTx);
    const submitted = await request(stack.apiUrl, 'POST', `/api/v1/executions/${signing.wallet.id}/submit`, {
      json: signedBody(signing.wallet, signing.executionId, signing.body.intent),
    });
    assert.equal(submitted.status, 200, submitted.text);
    assert.equal(submitted.body.result.status, 'SIGNING');
    await stack.client.workflow.getHandle(workflowIdOf(signing)).result();

    // A longer branch without either transfer.
    await chain.revert(snapshot);
    await chain.mine(CONFIRMATIONS + 3);
    const voided = await eventually(async () => {
      const [r] = await refundsOf(closed);
      return r?.state === 'void' && r;
    }, 30_000);
    assert.equal(voided.voidReason, 'reorged');
    assert.ok(voided.voidedAt);
    await eventually(async () => (await record(signing)).deposit?.reorged === true, 30_000);
    assert.equal((await record(signing)).status, 'SIGNING');
    await eventually(async () => (await metric('intent_refunds_voided_total')) === voidedBefore + 1, 30_000);
    await eventually(async () => (await metric('intent_chain_signing_without_deposit_total')) === signingBefore + 1, 30_000);

    // The very same transactions mined again.
    await chain.sendRaw(toClosed);
    await chain.sendRaw(toSigning);
    await chain.mine(CONFIRMATIONS);
    const due = await eventually(async () => {
      const [r] = await refundsOf(closed);
      return r?.state === 'due' && r;
    }, 30_000);
    assert.equal(due.voidedAt, undefined);
    assert.equal(due.id, row.id);
    const back = await eventually(async () => {
      const r = await record(signing);
      return r.deposit?.reorged === undefined && r;
    }, 30_000);
    assert.equal(back.deposit?.txHash, depositTx);
  });

  it('when anyone signals depositReorged for a deposit the chain still holds at depth, then the execution asks the chain and keeps its deposit unflagged', async () => {
    const e = await deposits.prepare({ minAmount: '1000', idPrefix: 'claim' });
    const tx = await chain.send(e.address, 1000n);
    const block = await chain.mine(1);
    await chain.mine(CONFIRMATIONS);
    await operationPending(e, 30_000);
    const handle = stack.client.workflow.getHandle(workflowIdOf(e));
    await handle.signal('depositReorged', {
      txHash: tx,
      transferIndex: 0,
      chain: CHAIN,
      blockNumber: block,
      blockHash: `0x${'00'.repeat(32)}`,
      asset: 'native',
    });
    // The claim is judged once its checkDeposit (the second: the first proved the deposit) completes.
    await eventually(async () => {
      const history = await handle.fetchHistory();
      const checks = (history.events ?? []).filter((ev) => ev.activityTaskScheduledEventAttributes?.activityType?.name === 'checkDeposit');
      const done = (history.events ?? []).filter((ev) =>
        checks.some((c) => String(c.eventId) === String(ev.activityTaskCompletedEventAttributes?.scheduledEventId)),
      );
      return checks.length === 2 && done.length === 2;
    }, 30_000);
    const r = await record(e);
    assert.equal(r.deposit?.txHash, tx);
    assert.equal(r.deposit?.reorged, undefined);
  });

  it('when the chain watcher is terminated while 2 × CHAIN_REORG_WINDOW blocks are mined, then a worker restarts it from its last confirmed block kept in the read model, and the deposit made meanwhile completes its execution', async () => {
    const e = await deposits.prepare({ minAmount: '1000', idPrefix: 'gone' });
    const { cursor } = await watcher();
    await stack.client.workflow.getHandle(watcherId).terminate('test: the watcher is gone');
    const tx = await chain.send(e.address, 1000n);
    const sentAt = await chain.mine(1);
    await chain.mine(2 * WINDOW);
    await ProcessStack.kill(stack.worker);
    await stack.startWorker();
    const funded = await operationPending(e, 60_000, recordIfReadable, 200);
    assert.equal(funded.deposit?.txHash, tx);
    // The block was 2 × CHAIN_REORG_WINDOW below the head the new run found: only a resume below it reads it.
    assert.equal(funded.deposit?.blockNumber, sentAt);
    assert.ok(sentAt > cursor);
  });
});
