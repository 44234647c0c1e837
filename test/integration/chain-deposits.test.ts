import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { historyToJSON, type History } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';
import { testSettings } from '../support/settings';
import { privateKeyToAddress, generatePrivateKey } from 'viem/accounts';
import type { Address } from 'viem';
import { chainWatcherWorkflowId, executionWorkflowId } from '../../contracts/temporal';
import { ExecutionService } from '../../api/executions/service';
import { loadConfig, projectRoot } from '../../config/config';
import { childEnv } from '../../config/child-env';
import { openDatabase, type Database } from '../../db/database';
import { DepositAddressStore } from '../../db/deposit-addresses';
import { OwnerRefundAddresses } from '../../db/owner-refund-address';
import { RefundLedger, type RefundRow } from '../../db/refund-ledger';
import { ANVIL_DEV_ACCOUNT } from '../../scripts/lib/anvil';
import { ExecutionStore } from '../../db/execution-store';
import { ServiceError } from '../../domain/errors';
import { readDepositXpub } from '../../lib/deposit-derivation';
import { startChildService } from '../../scripts/lib/child-service';
import { DUST_TRANSFERS_PER_ADDRESS } from '../../domain/owed-transfers';
import { TestChain } from '../support/chain';
import { docSnippets } from '../support/doc-snippets';
import { eventually, newWallet, sampleIntent, settledEventTypes } from '../support/executions';
import { freePort } from '../support/ports';
import { depositHelpers, startFollowingStack, type PreparedDeposit } from '../support/deposit-helpers';
import { type ProcessStack } from '../support/process-stack';
import { runReconcile } from '../support/reconcile-run';
import { metricSum, scrape } from '../support/prometheus';

const run = promisify(execFile);
const CHAIN = 'evm:31337';
/** This chain's number, named beside another chain's so the watcher must pick its own (not the table's 2). */
const CONFIRMATIONS = 3;

/**
 * A transfer worth paying back: far above REFUND_MIN_FEE_MULTIPLE times a plain transfer's fee on
 * anvil, so that its ledger row is written `due` (a row below it is dust, held as it is written).
 */
const OWED = 10n ** 16n;

/**
 * On-chain deposits end to end: a real anvil chain (automine off, so each test mines its blocks),
 * a real Temporal dev server, the worker and the API as real processes (the worker is SIGKILLed in
 * one test), real HTTP. The worker runs the chain watcher; the test only sends transfers and mines.
 */
describe('on-chain deposits: the chain watcher on a real anvil chain', function () {
  this.timeout(180_000);
  let chain: TestChain;
  let stack: ProcessStack;
  let metricsUrl: string;
  /** The walkthrough's token (docs/integrate.md), as npm start deploys it. */
  let tusd: Address;
  const watcherId = chainWatcherWorkflowId(CHAIN);
  const scratchDir = mkdtempSync(path.join(os.tmpdir(), 'chain-deposits-'));

  before(async function () {
    this.timeout(180_000);
    chain = await TestChain.start();
    tusd = await chain.deployToken('Test USD', 'tUSD');
    const metricsPort = await freePort();
    metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    stack = await startFollowingStack(chain, CHAIN, CONFIRMATIONS, {
      DEPOSIT_CONFIRMATIONS: `evm:1=1,${CHAIN}=${CONFIRMATIONS}`,
      DEPOSIT_TOKENS: `${CHAIN}:${tusd}=tUSD:6`,
      // Continue-as-new every few seconds: every test below also crosses runs of the watcher.
      CHAIN_ROUNDS_PER_RUN: '20',
      WORKER_METRICS_PORT: String(metricsPort),
    });
  });
  after(async () => {
    await stack?.stop();
    await chain?.stop();
    rmSync(scratchDir, { recursive: true, force: true });
  });

  const { api, watcher, record, recordIfReadable, depositSignals, watcherPast, operationPending, ...deposits } = depositHelpers(
    () => stack,
    () => chain,
    CHAIN,
  );
  const prepareWithDeposit = (minAmount = '1000', extra: Record<string, unknown> = {}) => deposits.prepare({ minAmount, extra });

  it('when prepare asks for an on-chain deposit, then the record has an address of its own, and the same prepare again answers the same address', async () => {
    const a = await prepareWithDeposit();
    const b = await prepareWithDeposit();
    assert.match(a.address, /^0x[0-9a-fA-F]{40}$/);
    assert.notEqual(a.address, b.address);
    const again = await api('POST', `/api/v1/executions/${a.wallet.id}`, a.body);
    assert.equal(again.status, 200, again.text);
    assert.equal(again.body.result.depositTarget.address, a.address);
    const other = await api('POST', `/api/v1/executions/${newWallet().id}`, {
      intent: sampleIntent(),
      deposit: { chain: 'evm:1', asset: 'native', minAmount: '1' },
    });
    assert.equal(other.status, 400, other.text);
  });

  it('when a second worker starts, then it finds the watcher running: one run per chain, however many workers', async () => {
    const second = startChildService('second-worker', process.execPath, [path.join(projectRoot, 'dist', 'worker', 'main.js')], {
      readyPattern: /chain watcher chain-watcher:evm:31337 running/,
      env: stack.env(),
      echo: false,
    });
    try {
      await second.ready;
      const runs: string[] = [];
      for await (const w of stack.client.workflow.list({ query: `WorkflowId = '${watcherId}' AND ExecutionStatus = 'Running'` }))
        runs.push(w.runId);
      assert.equal(runs.length, 1, `running watchers: ${runs.join(', ')}`);
    } finally {
      await second.stop(5000);
    }
  });

  /**
   * A prepare with a deposit on `depositChain` through an ExecutionService of its own (on `database`,
   * with `env` for its config): what it threw, and whether a workflow started.
   */
  async function prepareDirectly(database: Database, env: Record<string, string>, depositChain: string) {
    const config = loadConfig(childEnv({ TEMPORAL_TASK_QUEUE: stack.taskQueue, CHAIN_RPC_URL: chain.url, ...env }));
    const service = new ExecutionService(stack.client, config, new ExecutionStore(database), new RefundLedger(database), Date.now, {
      chain: async () => depositChain,
      prove: () => Promise.reject(new Error('not asked: prepare never proves a deposit')),
      payerKind: () => Promise.reject(new Error('not asked: prepare never proves a deposit')),
      traces: () => Promise.resolve(true),
      xpub: readDepositXpub(path.join(stack.tmpDir, 'deposit-xpub')),
      confirmations: () => 2,
      checkpoint: () => Promise.reject(new Error('not asked: prepare reads no checkpoint')),
      signalled: () => Promise.reject(new Error('not asked: prepare reads no signals')),
      transactionBlock: () => Promise.reject(new Error('not asked: prepare reads no transaction')),
      store: new DepositAddressStore(database),
      owners: new OwnerRefundAddresses(database),
    });
    const wallet = newWallet();
    const executionId = `chain-${randomUUID()}`;
    const refused = await service
      .prepare(wallet.id, { executionId, intent: sampleIntent(), deposit: { chain: depositChain, asset: 'native', minAmount: '1' } })
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    const started = await stack.client.workflow
      .getHandle(executionWorkflowId(wallet.id, executionId))
      .describe()
      .then(
        () => true,
        () => false,
      );
    return { refused, started };
  }

  it('when the chain has no number of confirmations (the worker refuses to watch it), then prepare with a deposit on it is 400 and starts no workflow', async () => {
    const database = await openDatabase({ sqliteFile: path.join(scratchDir, 'no-confirmations.sqlite') });
    try {
      const { refused, started } = await prepareDirectly(database, { DEPOSIT_CONFIRMATIONS: 'evm:1=5' }, 'evm:4242');
      assert.ok(refused instanceof ServiceError, String(refused));
      assert.equal(refused.status, 400);
      assert.match(refused.message, /DEPOSIT_CONFIRMATIONS gives no number for evm:4242/);
      assert.equal(started, false);
    } finally {
      await database.close();
    }
  });

  it('when the read model cannot take the address row, then prepare with a deposit is 503 (retryable) and starts no workflow', async () => {
    // A real SQLite read model, closed: every statement fails as with a database that is down.
    const database = await openDatabase({ sqliteFile: path.join(scratchDir, 'closed.sqlite') });
    await database.close();
    const { refused, started } = await prepareDirectly(database, {}, CHAIN);
    assert.ok(refused instanceof ServiceError, String(refused));
    assert.equal(refused.status, 503);
    assert.equal(started, false);
  });

  it(`when DEPOSIT_CONFIRMATIONS names this chain (evm:1=1,${CHAIN}=${CONFIRMATIONS}), then the watcher waits for this chain's number: pending one block short, OPERATION_PENDING at it`, async () => {
    const e = await prepareWithDeposit('1000');
    const tx = await chain.send(e.address, 1000n);
    await chain.mine(1);
    const block = await chain.blockOf(tx);
    const short = await watcherPast(block + CONFIRMATIONS - 2);
    assert.ok(
      short.pending.some((t) => t.txHash === tx),
      `pending at ${CONFIRMATIONS - 1} blocks: ${JSON.stringify(short.pending)}`,
    );
    assert.equal((await record(e)).status, 'PREPARED');
    await chain.mine(1);
    const done = await operationPending(e, 30_000);
    assert.equal(done.deposit?.blockNumber, block);
  });

  it('when the chain is one DEPOSIT_CONFIRMATIONS does not name and no default knows, then the worker refuses to run: it logs why and exits 1', async () => {
    const other = await TestChain.start(['--chain-id', '4242']);
    try {
      const worker = startChildService('refusing-worker', process.execPath, [path.join(projectRoot, 'dist', 'worker', 'main.js')], {
        readyPattern: /^.*worker refused its chain.*$/,
        // A task queue of its own, unversioned: it must not take the stack's tasks or touch its deployment.
        env: {
          ...stack.env(),
          CHAIN_RPC_URL: other.url,
          DEPOSIT_CONFIRMATIONS: '',
          TEMPORAL_TASK_QUEUE: `refuse-${randomUUID()}`,
          WORKER_VERSIONING: 'off',
        },
        echo: false,
      });
      const [line] = await worker.ready;
      assert.match(line, /evm:4242/);
      assert.equal(await worker.exited, 1);
    } finally {
      await other.stop();
    }
  });

  it('when a transfer is seen and the worker is SIGKILLed before its confirmations, then after the restart it is signalled once: OPERATION_PENDING', async () => {
    const e = await prepareWithDeposit('1000');
    const tx = await chain.send(e.address, 1000n);
    await chain.mine(1);
    const block = await chain.blockOf(tx);
    // Seen, not yet deep enough: held in the watcher's state, that is, by Temporal.
    await eventually(async () => (await watcher()).pending.some((t) => t.txHash === tx), 30_000);
    assert.equal((await record(e)).status, 'PREPARED');

    await stack.killWorker();
    await chain.mine(CONFIRMATIONS + 1);
    await stack.startWorker();

    const done = await operationPending(e, 90_000, recordIfReadable);
    assert.deepEqual(done.deposit, { txHash: tx, chain: CHAIN, amount: '1000', blockNumber: block, transferIndex: 0, asset: 'native' });
    await watcherPast((await chain.head()) + 3);
    assert.equal(await depositSignals(e), 1);
    assert.equal((await record(e)).history.filter((h) => h.status === 'OPERATION_PENDING').length, 1);
  });

  it('when a transfer is reorganised away before its confirmations, then it is never signalled', async () => {
    const e = await prepareWithDeposit('1000');
    const snapshot = await chain.snapshot();
    const tx = await chain.send(e.address, 5000n);
    await chain.mine(1);
    await eventually(async () => (await watcher()).pending.some((t) => t.txHash === tx), 30_000);
    // The block holding the transfer is replaced by a longer branch without it.
    await chain.revert(snapshot);
    const view = await watcherPast((await chain.head()) + CONFIRMATIONS + 3);
    assert.ok(!view.pending.some((t) => t.txHash === tx));
    const r = await record(e);
    assert.equal(r.status, 'PREPARED');
    assert.equal(r.deposit, undefined);
    assert.deepEqual(r.refusedDeposits, []);
    assert.equal(await depositSignals(e), 0);
  });

  it('when a signalled deposit is reorganised away deeper than the confirmations, then it is reported: reorged: true on the record, the metric, no status change', async () => {
    const before = metricSum(await scrape(metricsUrl), 'intent_chain_deep_reorgs_total', { chain: CHAIN });
    const e = await prepareWithDeposit('1000');
    const snapshot = await chain.snapshot();
    const tx = await chain.send(e.address, 1000n);
    await chain.mine(CONFIRMATIONS + 1);
    await eventually(async () => (await record(e)).status === 'OPERATION_PENDING', 30_000);
    await chain.revert(snapshot);
    await chain.mine(CONFIRMATIONS + 4);
    const marked = await eventually(async () => {
      const r = await record(e);
      return r.deposit?.reorged === true && r;
    }, 30_000);
    assert.equal(marked.status, 'OPERATION_PENDING');
    assert.equal(marked.deposit?.txHash, tx);
    await eventually(
      async () => metricSum(await scrape(metricsUrl), 'intent_chain_deep_reorgs_total', { chain: CHAIN }) === before + 1,
      10_000,
    );
    assert.equal(await depositSignals(e), 1);
  });

  it('when a transfer is below minAmount, then it is refused and recorded, and the execution stays PREPARED', async () => {
    const e = await prepareWithDeposit('1000');
    const tx = await chain.send(e.address, 999n);
    await chain.mine(CONFIRMATIONS);
    const r = await eventually(async () => {
      const rec = await record(e);
      return rec.refusedDeposits.length > 0 && rec;
    }, 30_000);
    assert.equal(r.status, 'PREPARED');
    assert.deepEqual(
      r.refusedDeposits.map((d) => ({ txHash: d.txHash, amount: d.amount, reason: d.reason })),
      [{ txHash: tx, amount: '999', reason: 'below-minimum' }],
    );
    // The execution's projection owes it in the ledger, with the sender it read from the chain.
    const rows = await eventually(async () => {
      const found = await refundsOf(e);
      return found.length === 1 && found;
    }, 30_000);
    assert.deepEqual(
      rows.map((d) => [d.txHash, d.reason, d.reportedBy, d.sender]),
      [[tx, 'below-minimum', 'execution', ANVIL_DEV_ACCOUNT.address.toLowerCase()]],
    );
  });

  it('when more transfers below minAmount than an address may have signalled reach it, then the rest are ignored and counted, the record stays bounded, and a full deposit after them still completes it', async () => {
    const e = await prepareWithDeposit('1000');
    const dust = async () => metricSum(await scrape(metricsUrl), 'intent_chain_dust_ignored_total', { chain: CHAIN });
    const before = await dust();
    // One a block: several in one block are a dust batch (the next test).
    for (let i = 1; i <= DUST_TRANSFERS_PER_ADDRESS + 3; i++) {
      await chain.send(e.address, BigInt(i));
      await chain.mine(1);
    }
    await chain.mine(CONFIRMATIONS);
    await eventually(async () => (await dust()) === before + 3, 30_000);
    const refused = await eventually(async () => {
      const rec = await record(e);
      return rec.refusedDeposits.length === DUST_TRANSFERS_PER_ADDRESS && rec;
    }, 30_000);
    assert.equal(refused.status, 'PREPARED');
    assert.ok(refused.refusedDeposits.every((d) => d.reason === 'below-minimum'));
    const tx = await chain.send(e.address, 1000n);
    await chain.mine(CONFIRMATIONS);
    const funded = await operationPending(e, 30_000);
    assert.equal(funded.deposit?.txHash, tx);
    await watcherPast((await chain.blockOf(tx)) + CONFIRMATIONS + 2);
    assert.equal((await record(e)).refusedDeposits.length, DUST_TRANSFERS_PER_ADDRESS);
    assert.equal(await dust(), before + 3);
  });

  it('when many transfers below minAmount reach one address in a block, then they are one dust batch: one ledger row per block with their sum, held as too small, nothing signalled to the execution; a full deposit after them still completes it', async () => {
    const e = await prepareWithDeposit('1000');
    for (let i = 0; i < 30; i++) await chain.send(e.address, 1n);
    const first = await chain.mine(1);
    for (let i = 0; i < 2; i++) await chain.send(e.address, 2n);
    const second = await chain.mine(1);
    await chain.mine(CONFIRMATIONS);
    const rows = await eventually(async () => {
      const found = await refundsOf(e);
      return found.length === 2 && found;
    }, 30_000);
    const hashes = await Promise.all([first, second].map(async (n) => (await chain.client.getBlock({ blockNumber: BigInt(n) })).hash));
    assert.deepEqual(
      rows
        .map((r) => [r.txHash, r.transferIndex, r.amount, r.transfers, r.reason, r.holdReason, r.sender, r.state])
        .sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
      [
        [hashes[0], 0, '30', 30, 'below-minimum', 'too-small', undefined, 'held'],
        [hashes[1], 0, '4', 2, 'below-minimum', 'too-small', undefined, 'held'],
      ].sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
    );
    const r = await record(e);
    assert.equal(r.status, 'PREPARED');
    assert.deepEqual(r.refusedDeposits, []);
    const tx = await chain.send(e.address, 1000n);
    await chain.mine(CONFIRMATIONS);
    assert.equal((await operationPending(e, 30_000)).deposit?.txHash, tx);
  });

  it('when a transfer goes to an address that is no execution deposit address, then nothing moves', async () => {
    const e = await prepareWithDeposit('1');
    const stranger = privateKeyToAddress(generatePrivateKey());
    const { signalledTotal } = await watcher();
    const tx = await chain.send(stranger, 10_000n);
    await chain.mine(1);
    const view = await watcherPast((await chain.blockOf(tx)) + CONFIRMATIONS + 2);
    assert.equal(view.signalledTotal, signalledTotal);
    assert.ok(!view.pending.some((t) => t.txHash === tx));
    assert.equal((await record(e)).status, 'PREPARED');
  });

  /** The refunds ledger rows of an execution, read from the stack's read model (the worker writes them). */
  const refundsOf = async (e: PreparedDeposit) => {
    const database = await openDatabase({ sqliteFile: path.join(stack.tmpDir, 'read-model.sqlite') });
    try {
      return await new RefundLedger(database).ofExecution(executionWorkflowId(e.wallet.id, e.executionId));
    } finally {
      await database.close();
    }
  };

  it('when a transfer reaches an EXPIRED execution, whose workflow has closed, then it is refused as expired: one row of the refunds ledger, the record unchanged', async () => {
    const e = await prepareWithDeposit(String(OWED), { ttlSeconds: 1 });
    await eventually(async () => (await record(e)).status === 'EXPIRED', 15_000);
    await stack.client.workflow.getHandle(executionWorkflowId(e.wallet.id, e.executionId)).result();
    const tx = await chain.send(e.address, OWED);
    await chain.mine(CONFIRMATIONS);
    const rows = await eventually(async () => {
      const found = await refundsOf(e);
      return found.length > 0 && found;
    }, 30_000);
    assert.deepEqual(
      rows.map((d) => ({ txHash: d.txHash, reason: d.reason, amount: d.amount, chain: d.chain, reportedBy: d.reportedBy, state: d.state })),
      [{ txHash: tx, reason: 'expired', amount: String(OWED), chain: CHAIN, reportedBy: 'chain-watcher', state: 'due' }],
    );
    const r = await record(e);
    assert.equal(r.status, 'EXPIRED');
    assert.deepEqual(r.refusedDeposits, []);
  });

  it('when a transfer reaches an execution whose workflow has closed, then it is counted undelivered once, owed back in the refunds ledger, and the watcher goes on: a deposit in the same block to another execution is signalled', async () => {
    const closed = await prepareWithDeposit('1000');
    const open = await prepareWithDeposit('1000');
    // Closed the way an operator closes it: the workflow cannot take a signal any more.
    await stack.client.workflow.getHandle(executionWorkflowId(closed.wallet.id, closed.executionId)).terminate('closed before its deposit');
    const undelivered = async () => metricSum(await scrape(metricsUrl), 'intent_chain_deposits_undelivered_total', { chain: CHAIN });
    const before = await undelivered();
    const { signalledTotal } = await watcher();
    await chain.send(closed.address, 1000n);
    const tx = await chain.send(open.address, 1000n);
    await chain.mine(CONFIRMATIONS);
    const r = await operationPending(open, 30_000);
    assert.equal(r.deposit?.txHash, tx);
    await eventually(async () => (await undelivered()) === before + 1, 10_000);
    // Terminated while PREPARED: the transfer is owed back as one to a closed execution.
    assert.deepEqual(
      (await refundsOf(closed)).map((d) => [d.reason, d.amount, d.reportedBy]),
      [['closed', '1000', 'chain-watcher']],
    );
    const view = await watcherPast((await chain.blockOf(tx)) + CONFIRMATIONS + 2);
    assert.equal(view.signalledTotal, signalledTotal + 1, 'only the open execution counts as signalled');
    assert.equal(await undelivered(), before + 1, 'reported once, not at every round');
  });

  /** Whether every checkDeposit the execution scheduled has finished (completed or failed for good). */
  async function proofsSettled(e: PreparedDeposit, atLeast: number): Promise<boolean> {
    const history = await stack.client.workflow.getHandle(executionWorkflowId(e.wallet.id, e.executionId)).fetchHistory();
    const events = history.events ?? [];
    const scheduled = new Set(
      events.filter((ev) => ev.activityTaskScheduledEventAttributes?.activityType?.name === 'checkDeposit').map((ev) => String(ev.eventId)),
    );
    const ended = events.filter((ev) => {
      const id = ev.activityTaskCompletedEventAttributes?.scheduledEventId ?? ev.activityTaskFailedEventAttributes?.scheduledEventId;
      return id !== undefined && id !== null && scheduled.has(String(id));
    }).length;
    return scheduled.size >= atLeast && ended === scheduled.size;
  }

  /** The execution's history length once it is idle (its last workflow task done, no activity running). */
  const historyLength = async (e: PreparedDeposit) =>
    (await settledEventTypes(stack, executionWorkflowId(e.wallet.id, e.executionId))).length;

  it('when prepare asks for a deposit target of minAmount 0, then it is 400: such a target would take any transfer as the deposit', async () => {
    const res = await api('POST', `/api/v1/executions/${newWallet().id}`, {
      intent: sampleIntent(),
      deposit: { chain: CHAIN, asset: 'native', minAmount: '0' },
    });
    assert.equal(res.status, 400, res.text);
    assert.match(res.body.error, /minAmount/);
  });

  it("when a deposit token reports transfers the chain does not show to the execution's address (made up, paid elsewhere, not yet deep enough), then each is 409 and nothing is written; the real one, once deep enough, is stored with the chain's amount", async () => {
    const e = await prepareWithDeposit('1000');
    const report = (txHash: string, amount = '1000') =>
      api('POST', `/api/v1/executions/${e.wallet.id}/${e.executionId}/deposit`, { txHash, chain: CHAIN, amount });
    const before = await historyLength(e);
    for (let i = 0; i < 30; i++) {
      const madeUp = await report(`0x${randomUUID().replace(/-/g, '')}${randomUUID().replace(/-/g, '')}`);
      assert.equal(madeUp.status, 409, madeUp.text);
      assert.match(madeUp.body.error, /the chain does not back this deposit: the chain holds no transaction/);
    }
    // No hash of the chain at all: the caller's mistake (400), never the node's (503).
    for (const malformed of ['0', '0x1234', `0x${'g'.repeat(64)}`]) {
      const bad = await report(malformed);
      assert.equal(bad.status, 400, bad.text);
      assert.match(bad.body.error, /is no transaction hash of/);
    }
    const elsewhere = await chain.send(privateKeyToAddress(generatePrivateKey()), 5000n);
    await chain.mine(CONFIRMATIONS);
    const paidElsewhere = await report(elsewhere, '5000');
    assert.equal(paidElsewhere.status, 409, paidElsewhere.text);
    assert.match(paidElsewhere.body.error, /does not pay the execution's deposit address/);
    const r = await record(e);
    assert.equal(r.status, 'PREPARED');
    assert.deepEqual(r.refusedDeposits, []);
    assert.equal(await historyLength(e), before, 'no report the chain does not back reached the workflow');

    const tx = await chain.send(e.address, 1500n);
    await chain.mine(1);
    const early = await report(tx, '1500');
    assert.equal(early.status, 409, early.text);
    assert.match(early.body.error, /not yet DEPOSIT_CONFIRMATIONS deep/);
    await chain.mine(CONFIRMATIONS - 1);
    // The watcher signals the same transfer once deep enough: whichever comes first stores it, the other is the same deposit.
    const believed = await report(tx, '999999999');
    assert.equal(believed.status, 200, believed.text);
    assert.equal(believed.body.result.status, 'OPERATION_PENDING');
    assert.deepEqual(
      {
        txHash: believed.body.result.deposit.txHash,
        amount: believed.body.result.deposit.amount,
        transferIndex: believed.body.result.deposit.transferIndex,
      },
      { txHash: tx, amount: '1500', transferIndex: 0 },
    );
  });

  it('when a depositCompleted signal claims a transfer the chain shows paying another address, then it is not believed: the execution stays PREPARED with no deposit, the claim recorded as refuted and owed nothing', async () => {
    const e = await prepareWithDeposit('1000');
    const elsewhere = await chain.send(privateKeyToAddress(generatePrivateKey()), 5000n);
    await chain.mine(CONFIRMATIONS);
    await stack.client.workflow.getHandle(executionWorkflowId(e.wallet.id, e.executionId)).signal('depositCompleted', {
      txHash: elsewhere,
      chain: CHAIN,
      amount: '5000',
      transferIndex: 0,
      blockNumber: await chain.blockOf(elsewhere),
    });
    await eventually(() => proofsSettled(e, 1), 30_000);
    const r = await eventually(async () => {
      const rec = await record(e);
      return rec.refutedClaims !== undefined && rec;
    }, 30_000);
    assert.equal(r.status, 'PREPARED');
    assert.equal(r.deposit, undefined);
    assert.deepEqual(r.refusedDeposits, []);
    assert.deepEqual(
      r.refutedClaims?.map((c) => [c.txHash, c.transferIndex, c.reason]),
      [[elsewhere, 0, 'other-address']],
    );
    assert.deepEqual(await refundsOf(e), []);
  });

  it('when 40 more transfers of minAmount reach an execution after its deposit and one reaches an execution that has closed, then the execution does not grow (one deposit signal, no refusedDeposits) and the ledger holds 41 rows due', async () => {
    const e = await prepareWithDeposit(String(OWED));
    const closed = await prepareWithDeposit(String(OWED), { ttlSeconds: 1 });
    await stack.client.workflow.getHandle(executionWorkflowId(closed.wallet.id, closed.executionId)).result();
    const first = await chain.send(e.address, OWED);
    await chain.mine(CONFIRMATIONS);
    // The read model shows the deposit (the list route reads it): from here the watcher owes the rest back.
    await eventually(async () => {
      const list = await api('GET', `/api/v1/executions/${e.wallet.id}?status=OPERATION_PENDING`);
      return list.status === 200 && list.body.result.length === 1;
    }, 30_000);
    const more: string[] = [];
    for (let i = 0; i < 40; i++) more.push(await chain.send(e.address, OWED));
    const late = await chain.send(closed.address, OWED);
    await chain.mine(CONFIRMATIONS);
    const rows = await eventually(async () => {
      const found = await refundsOf(e);
      return found.length === 40 && found;
    }, 60_000);
    const closedRows = await eventually(async () => {
      const found = await refundsOf(closed);
      return found.length === 1 && found;
    }, 30_000);
    assert.deepEqual(
      closedRows.map((d) => [d.txHash, d.reason, d.state]),
      [[late, 'expired', 'due']],
    );
    assert.ok(rows.every((d) => d.state === 'due'));
    assert.deepEqual(new Set(rows.map((r) => r.txHash)), new Set(more));
    assert.ok(rows.every((r) => r.reason === 'other-tx' && r.amount === String(OWED) && r.reportedBy === 'chain-watcher'));
    // Where each refund goes back to: the sender the chain shows.
    const sender = ANVIL_DEV_ACCOUNT.address.toLowerCase();
    assert.deepEqual(
      [...rows, ...closedRows].map((d) => d.sender),
      [...rows, ...closedRows].map(() => sender),
    );
    const r = await record(e);
    assert.equal(r.deposit?.txHash, first);
    assert.deepEqual(r.refusedDeposits, []);
    assert.equal(await depositSignals(e), 1);
    // The record stays bounded and says how many there are, and where: the ledger query lists all 40.
    assert.equal(r.refunds?.total, 40);
    const listed = await api('GET', r.refunds!.url + '&pageSize=200');
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(new Set(listed.body.result.map((row: RefundRow) => row.txHash)), new Set(more));
    assert.equal((await record(closed)).refunds?.total, 1);
  });

  it('when 200 deposits arrive in 20 blocks, then 200 executions are OPERATION_PENDING, each signalled once', async function () {
    this.timeout(300_000);
    const executions: PreparedDeposit[] = [];
    for (let i = 0; i < 200; i += 10) executions.push(...(await Promise.all(Array.from({ length: 10 }, () => prepareWithDeposit('100')))));
    const { signalledTotal } = await watcher();
    const txs = await deposits.sendInBlocks(executions, 10, (e, block) => chain.send(e.address, 100n + BigInt(block)));
    const blocks = new Set(await Promise.all(txs.map((tx) => chain.blockOf(tx))));
    assert.equal(blocks.size, 20);
    await chain.mine(CONFIRMATIONS);
    await eventually(async () => (await watcher()).signalledTotal >= signalledTotal + 200, 120_000, 500);
    const records = await deposits.recordsOf(executions);
    assert.deepEqual(
      records.map((r) => r.status),
      records.map(() => 'OPERATION_PENDING'),
    );
    assert.deepEqual(
      records.map((r) => r.deposit?.txHash),
      txs,
    );
    const counts = await deposits.depositSignalsOf(executions);
    assert.deepEqual(
      counts,
      counts.map(() => 1),
    );
    assert.equal((await watcher()).signalledTotal, signalledTotal + 200);
  });

  /** Runs a shell block of the walkthrough as written, with anvil mining a block every 200 ms (npm start's mines one a second). */
  async function runWalkthrough(block: string): Promise<string> {
    const miner = setInterval(() => void chain.mine(1).catch(() => undefined), 200);
    try {
      const env = childEnv({
        API: stack.apiUrl,
        PREPARE_TOKEN: stack.token,
        CHAIN_RPC_URL: chain.url,
        TUSD: tusd,
        DEPOSIT_TOKENS: `${CHAIN}:${tusd}=tUSD:6`,
      });
      return (await run('bash', ['-euo', 'pipefail', '-c', block], { env, cwd: projectRoot, timeout: 90_000 })).stdout;
    } finally {
      clearInterval(miner);
    }
  }

  it('when the token walkthrough of docs/integrate.md runs as written, then it prints 201, the tUSD transfer, and OPERATION_PENDING with that transfer (token, log index, amount) as the deposit', async () => {
    const [, tokenWalkthrough] = docSnippets('integrate.md', 'sh', 'On-chain deposits');
    assert.ok(tokenWalkthrough, 'docs/integrate.md "On-chain deposits" has its token block');
    const [prepared, transferLine, recordLine, ...rest] = (await runWalkthrough(tokenWalkthrough)).trim().split('\n');
    assert.equal(prepared, '201');
    const transfer = JSON.parse(transferLine);
    assert.equal(transfer.asset, `erc20:${tusd.toLowerCase()}`);
    assert.equal(transfer.amount, '25000000');
    assert.deepEqual(JSON.parse(recordLine), {
      status: 'OPERATION_PENDING',
      deposit: {
        txHash: transfer.txHash,
        chain: CHAIN,
        amount: '25000000',
        blockNumber: transfer.blockNumber,
        transferIndex: 0,
        asset: `erc20:${tusd.toLowerCase()}`,
      },
    });
    assert.deepEqual(rest, []);
  });

  it('when the on-chain walkthrough of docs/integrate.md runs as written, then it prints 201, the transfer, and OPERATION_PENDING with that transfer as the deposit', async () => {
    const [walkthrough] = docSnippets('integrate.md', 'sh', 'On-chain deposits');
    assert.ok(walkthrough, 'docs/integrate.md "On-chain deposits" has its shell block');
    const out = await runWalkthrough(walkthrough);
    const [prepared, transferLine, recordLine, ...rest] = out.trim().split('\n');
    assert.equal(prepared, '201');
    const transfer = JSON.parse(transferLine);
    assert.equal(transfer.chain, CHAIN);
    assert.equal(transfer.amount, '1000000000000000');
    assert.deepEqual(JSON.parse(recordLine), {
      status: 'OPERATION_PENDING',
      deposit: {
        txHash: transfer.txHash,
        chain: CHAIN,
        amount: transfer.amount,
        blockNumber: transfer.blockNumber,
        transferIndex: 0,
        asset: 'native',
      },
    });
    assert.deepEqual(rest, []);
  });

  it('when npm run reconcile reads the chain after every test above (deposits, dust, 40 transfers after a deposit, transfers to closed executions, reorgs), then every transfer in is taken or owed: balanced; with one ledger row gone, it names that transfer and exits 1', async () => {
    const reconcile = () => runReconcile(stack, CHAIN);
    // Let the watcher take (or owe) everything confirmed so far.
    await watcherPast((await chain.head()) + CONFIRMATIONS + 1);
    await eventually(async () => (await reconcile()).code === 0, 30_000);
    const balanced = await reconcile();
    const [summary] = balanced.lines;
    assert.equal(summary.balanced, true, JSON.stringify(balanced.lines));
    assert.ok(BigInt(summary.in) > 0n && BigInt(summary.due) > 0n && BigInt(summary.taken) > 0n, JSON.stringify(summary));
    assert.equal(BigInt(summary.in), BigInt(summary.taken) + BigInt(summary.due) + BigInt(summary.refunded) + BigInt(summary.waived));
    // The token walkthrough's tUSD deposit is counted apart, in tUSD's own units.
    assert.deepEqual(summary.tokens, {
      [`erc20:${tusd.toLowerCase()}`]: { in: '25000000', taken: '25000000', due: '0', refunded: '0', waived: '0', unaccounted: '0' },
    });

    // Every ledger row judged against the chain: each is present (the reorg tests' rows were never owed).
    const rows = balanced.lines.filter((l) => l.ledgerRow).map((l) => l.ledgerRow as { verdict: string; state: string });
    assert.ok(rows.length > 0);
    assert.deepEqual(summary.ledgerRows, { present: rows.length, absent: 0, 'amount-differs': 0 });

    // One row of money owed removed by hand: the reconciler must find that transfer.
    const database = await openDatabase({ sqliteFile: path.join(stack.tmpDir, 'read-model.sqlite') });
    try {
      const victim = await database.db.selectFrom('refunds').selectAll().where('chain', '=', CHAIN).limit(1).executeTakeFirstOrThrow();
      await database.db.deleteFrom('refunds').where('id', '=', victim.id).execute();
      const short = await reconcile();
      assert.equal(short.code, 1);
      assert.equal(short.lines[0].balanced, false);
      assert.deepEqual(
        short.lines.filter((l) => l.unaccountedTransfer).map((l) => [l.unaccountedTransfer.txHash, l.unaccountedTransfer.workflowId]),
        [[victim.tx_hash, victim.workflow_id]],
      );
      await database.db.insertInto('refunds').values(victim).execute();
      // A row whose amount the chain contradicts, and one whose transfer the chain never held.
      await database.db.updateTable('refunds').set({ amount: '1' }).where('id', '=', victim.id).execute();
      const ghost = { ...victim, id: 'f'.repeat(32), tx_hash: `0x${'ab'.repeat(32)}` };
      await database.db.insertInto('refunds').values(ghost).execute();
      const contradicted = await reconcile();
      assert.equal(contradicted.code, 1);
      assert.deepEqual(contradicted.lines[0].ledgerRows, { present: rows.length - 1, absent: 1, 'amount-differs': 1 });
      await database.db.deleteFrom('refunds').where('id', '=', ghost.id).execute();
      await database.db.updateTable('refunds').set({ amount: victim.amount }).where('id', '=', victim.id).execute();
    } finally {
      await database.close();
    }
    assert.equal((await reconcile()).code, 0);
  });

  it('when every run of the watcher (continued as new, with its state, through the tests above) is replayed with the current code, then none fails', async () => {
    const histories: Array<{ workflowId: string; history: History }> = [];
    for await (const h of stack.client.workflow.list({ query: `WorkflowId = '${watcherId}'` }).intoHistories())
      histories.push({ workflowId: h.workflowId, history: h.history as History });
    // CHAIN_ROUNDS_PER_RUN=20: the tests above crossed many runs, each continued from the last with its state.
    assert.ok(histories.length > 1, `watcher runs: ${histories.length}`);
    const failures: string[] = [];
    for await (const result of Worker.runReplayHistories(
      { workflowsPath: require.resolve('../../workflows'), replayName: 'chain-watcher' },
      histories,
    )) {
      if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
    }
    assert.deepEqual(failures, []);
    // npm run histories:record (RECORD_HISTORIES=<tag>) keeps the longest run as a fixture that the replay test replays.
    const tag = testSettings().RECORD_HISTORIES;
    if (tag) {
      const longest = histories.reduce((a, b) => ((b.history.events?.length ?? 0) > (a.history.events?.length ?? 0) ? b : a));
      const dir = path.join(projectRoot, 'test', 'fixtures', 'histories');
      mkdirSync(dir, { recursive: true });
      writeFileSync(
        path.join(dir, `${tag}-chainWatcherWorkflow-${longest.history.events?.length}.json`),
        JSON.stringify({ workflowId: watcherId, history: JSON.parse(historyToJSON(longest.history)) }),
      );
    }
  });
});
