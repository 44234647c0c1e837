import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { WorkflowNotFoundError } from '@temporalio/client';
import {
  REFUND_ADDRESS_WORKFLOW_TYPE,
  executionWorkflowId,
  refundAddressWorkflowId,
  refundSweepScheduleId,
  refundsTaskQueue,
} from '../../contracts/temporal';
import { TestChain } from '../support/chain';
import { depositHelpers, startFollowingStack, type PreparedDeposit } from '../support/deposit-helpers';
import { eventually, newWallet, sampleIntent } from '../support/executions';
import { request } from '../support/http';
import type { ProcessStack } from '../support/process-stack';
import { refundReads } from '../support/refund-reads';

const CHAIN = 'evm:31337';
const CONFIRMATIONS = 2;
const OPEN_RUNS = 30;
/** Deposit addresses with a row to pay. */
const ADDRESSES = 3;
/** REFUND_OPEN_RUNS: refund workflows the sweep keeps running at once; the third address waits. */
const REFUND_RUNS = 2;
/** Enough that the refunder's minimum (ten times a refund's most cost) does not hold the row. */
const LATE_DEPOSIT = 10n ** 16n;

/**
 * Execution capacity is for executions (docs/decisions/0089): refund workflows, which anyone who
 * sends money to a deposit address causes, take none of CAPACITY_OPEN_RUNS, and run on a task
 * queue of their own, as many at once as REFUND_OPEN_RUNS. The refunds here stay open for the
 * whole file: their transfers are never deep enough to pay (the test mines no further block), so
 * each refund workflow waits and looks again, as one does on a real chain for minutes.
 */
describe('capacity: refund workflows take no place of an execution, and as many run as REFUND_OPEN_RUNS', function () {
  this.timeout(180_000);
  let chain: TestChain;
  let stack: ProcessStack;

  before(async function () {
    this.timeout(120_000);
    chain = await TestChain.start();
    stack = await startFollowingStack(chain, CHAIN, CONFIRMATIONS, {
      CAPACITY_OPEN_RUNS: String(OPEN_RUNS),
      REFUND_OPEN_RUNS: String(REFUND_RUNS),
      REFUND_PAYMENTS: 'on',
    });
  });
  after(async () => {
    await stack?.stop();
    await chain?.stop();
  });

  const deposits = depositHelpers(
    () => stack,
    () => chain,
    CHAIN,
  );
  const { rowOf, readModel } = refundReads(
    () => stack,
    () => chain,
  );

  const refundsOf = (e: PreparedDeposit) => readModel((ledger) => ledger.ofExecution(executionWorkflowId(e.wallet.id, e.executionId)));

  /** An execution that expired and closed, then received a transfer: a row `due` on its deposit address, a refund workflow for it. */
  async function lateDeposit(): Promise<PreparedDeposit> {
    const e = await deposits.prepare({ minAmount: '1000', extra: { ttlSeconds: 1 }, idPrefix: 'late' });
    await eventually(async () => (await deposits.record(e)).status === 'EXPIRED', 15_000);
    await stack.client.workflow.getHandle(executionWorkflowId(e.wallet.id, e.executionId)).result();
    const tx = await chain.send(e.address, LATE_DEPOSIT);
    await chain.mine(CONFIRMATIONS);
    await rowOf(e, tx, (row) => row.state === 'due');
    return e;
  }

  /** The refund workflows running, on any task queue, or on `taskQueue` only. */
  const runningRefunds = async (taskQueue?: string) =>
    (
      await stack.client.workflow.count(
        `WorkflowType = '${REFUND_ADDRESS_WORKFLOW_TYPE}' AND ExecutionStatus = 'Running'${taskQueue ? ` AND TaskQueue = '${taskQueue}'` : ''}`,
      )
    ).count;

  const late: PreparedDeposit[] = [];

  it('when refund workflows run (waiting for their transfers to be deep enough), then 28 executions prepared with CAPACITY_OPEN_RUNS=30 are all admitted', async () => {
    for (let i = 0; i < ADDRESSES; i++) late.push(await lateDeposit());
    await eventually(async () => (await runningRefunds()) >= REFUND_RUNS, 30_000);
    // Each API counts the task queue's other runs at most every 5 s: the next count sees the refunds.
    await new Promise((r) => setTimeout(r, 5_500));

    const answers = await Promise.all(
      Array.from({ length: 28 }, () =>
        request(stack.apiUrl, 'POST', `/api/v1/executions/${newWallet().id}`, {
          token: stack.token,
          json: { executionId: `cap-${randomUUID()}`, intent: sampleIntent() },
        }),
      ),
    );
    assert.deepEqual(
      answers.map((a) => (a.status === 201 ? 201 : `${a.status} ${a.body?.code}`)),
      Array<number>(28).fill(201),
    );
    // The refunds were running all along, and still wait: none was paid or closed meanwhile. They
    // run on the refunds task queue, which the API does not count.
    assert.equal(await runningRefunds(), REFUND_RUNS);
    assert.equal(await runningRefunds(refundsTaskQueue(stack.taskQueue)), REFUND_RUNS);
  });

  it('when more deposit addresses have a row to pay than REFUND_OPEN_RUNS, then the sweep keeps that many refund workflows running and the others wait with their rows due', async () => {
    // Two more sweeps (every 5 s) than it took to start the first ones.
    await new Promise((r) => setTimeout(r, 11_000));
    assert.equal(await runningRefunds(), REFUND_RUNS);
    const waiting: PreparedDeposit[] = [];
    for (const e of late) {
      const described = await stack.client.workflow
        .getHandle(refundAddressWorkflowId(CHAIN, e.address))
        .describe()
        .catch((err: unknown) => {
          assert.ok(err instanceof WorkflowNotFoundError, String(err));
          return undefined;
        });
      if (described === undefined) waiting.push(e);
      else assert.equal(described.taskQueue, refundsTaskQueue(stack.taskQueue));
    }
    assert.equal(waiting.length, ADDRESSES - REFUND_RUNS);
    for (const e of waiting)
      assert.deepEqual(
        (await refundsOf(e)).map((row) => row.state),
        ['due'],
      );
  });

  it('when the refund sweep schedule starts its workflow on the service task queue (made by an older build), then a worker that starts points it at the refunds task queue', async () => {
    const schedule = stack.client.schedule.getHandle(refundSweepScheduleId(stack.taskQueue));
    await schedule.update((previous) => ({ ...previous, action: { ...previous.action, taskQueue: stack.taskQueue } }));
    assert.equal((await schedule.describe()).action.taskQueue, stack.taskQueue);
    await stack.killWorker();
    await stack.startWorker();
    await eventually(async () => (await schedule.describe()).action.taskQueue === refundsTaskQueue(stack.taskQueue), 30_000);
  });
});
