import assert from 'node:assert/strict';
import type { ExecutionRecord } from '../../domain/execution-state';
import { randomUUID } from 'node:crypto';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import {
  EXECUTION_WORKFLOW_TYPE,
  ExecutionFailure,
  depositCompletedSignal,
  getExecutionQuery,
  recordDepositUpdate,
  submitSignatureUpdate,
  cancelExecutionUpdate,
  type SubmitSignatureArgs,
  type SubmitSignatureResult,
} from '../../contracts/temporal';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createActivities } from '../../activities';
import { openDatabase, type Database } from '../../db/database';
import { ExecutionStore } from '../../db/execution-store';
import { RefundLedger } from '../../db/refund-ledger';
import { TokenStore } from '../../tokens/token-store';
import { testNodeTransport } from '../support/node-keys';
import { eventTypes, timeSkippingEnv, updateEvents, workflowWorker } from './env';
import { executionInput, submitArgs as fixedSubmitArgs } from '../support/execution-inputs';

const HOUR = 3_600_000;

/** A submit's answer: the status, and the record for the caller to write into the read model. */
function submitAnswered(answer: SubmitSignatureResult, status: string): void {
  assert.equal(answer.status, status);
  assert.equal(answer.record?.status, status);
}
const DAY = 24 * HOUR;

// The execution workflow alone, on Temporal's time-skipping test server: every transition of the
// state machine driven through the workflow's real signal, Updates and query; expiry and lingering
// in skipped time. (The whole stack is tested in test/integration; these pin the workflow.)
describe('workflow: executionWorkflow (time-skipping test server)', function () {
  this.timeout(120_000);
  let env: TestWorkflowEnvironment;
  let stopWorker: () => Promise<void>;
  let database: Database;
  let store: ExecutionStore;
  const taskQueue = `wf-exec-${randomUUID()}`;
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'intent-service-wf-'));

  before(async () => {
    env = await timeSkippingEnv();
    // The execution workflow's activities write the read model: a real SQLite file here.
    database = await openDatabase({ sqliteFile: path.join(tmp, 'read-model.sqlite') });
    store = new ExecutionStore(database);
    const activities = createActivities({
      tokens: new TokenStore(path.join(tmp, 'tokens.json')),
      nodeRequestTimeoutMs: 1000,
      nodeTransport: testNodeTransport(),
      executions: store,
      refunds: new RefundLedger(database),
    });
    stopWorker = (await workflowWorker(env, taskQueue, activities)).stop;
  });
  after(async () => {
    await stopWorker?.();
    await env?.teardown();
    await database?.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  async function start(options: { ttlMs?: number; lingerSeconds?: number; signingDeadlineSeconds?: number } = {}) {
    const { workflowId, input: base } = executionInput(await env.currentTimeMs(), {
      ttlMs: options.ttlMs ?? HOUR,
      lingerSeconds: options.lingerSeconds ?? 7 * 24 * 3600,
    });
    const input = options.signingDeadlineSeconds === undefined ? base : { ...base, signingDeadlineSeconds: options.signingDeadlineSeconds };
    return { handle: await env.client.workflow.start(EXECUTION_WORKFLOW_TYPE, { workflowId, taskQueue, args: [input] }), workflowId };
  }

  const submitArgs = (signature = `0x${'a'.repeat(128)}`): SubmitSignatureArgs => fixedSubmitArgs(signature);

  /** The ApplicationFailure of a rejected Update. */
  async function rejection(promise: Promise<unknown>): Promise<ApplicationFailure> {
    const err = await promise.then(
      () => assert.fail('the Update was accepted'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof WorkflowUpdateFailedError, String(err));
    assert.ok(err.cause instanceof ApplicationFailure, String(err.cause));
    return err.cause;
  }

  it('when prepared, then the record is PREPARED with one history entry', async () => {
    const { handle } = await start();
    const record = await handle.query(getExecutionQuery);
    assert.equal(record.status, 'PREPARED');
    assert.deepEqual(
      record.history.map((h) => h.status),
      ['PREPARED'],
    );
  });

  it('when the deposit signal comes, then PREPARED → OPERATION_PENDING; a submit then moves it to SIGNING', async () => {
    const { handle } = await start();
    await handle.signal(depositCompletedSignal, { txHash: '0x1' });
    assert.equal((await handle.query(getExecutionQuery)).status, 'OPERATION_PENDING');
    submitAnswered(await handle.executeUpdate(submitSignatureUpdate, { args: [submitArgs()] }), 'SIGNING');
    const record = await handle.query(getExecutionQuery);
    assert.deepEqual(
      record.history.map((h) => h.status),
      ['PREPARED', 'OPERATION_PENDING', 'SIGNING'],
    );
    assert.equal(record.signingMessage, 'message');
  });

  it('when a deposit signal names an amount that is not base units (any client of Temporal may signal), then it is no deposit: the record shows the refuted claim, and a signal in base units then completes it', async () => {
    const { handle } = await start();
    await handle.signal(depositCompletedSignal, { txHash: '0xab1', amount: '0099.5' });
    const refuted = await handle.query(getExecutionQuery);
    assert.equal(refuted.status, 'PREPARED');
    assert.deepEqual(
      refuted.refutedClaims?.map((c) => [c.txHash, c.reason]),
      [['0xab1', 'amount-not-base-units']],
    );
    assert.deepEqual(refuted.refusedDeposits, []);
    await handle.signal(depositCompletedSignal, { txHash: '0xab2', amount: '995' });
    assert.equal((await handle.query(getExecutionQuery)).deposit?.amount, '995');
  });

  it('when the submit comes first, then it stays PREPARED with the payload, and the deposit moves it through OPERATION_PENDING to SIGNING', async () => {
    const { handle } = await start();
    submitAnswered(await handle.executeUpdate(submitSignatureUpdate, { args: [submitArgs()] }), 'PREPARED');
    const record = await handle.executeUpdate(recordDepositUpdate, { args: [{ txHash: '0x2', amount: '5' }] });
    assert.equal(record.status, 'SIGNING');
    assert.deepEqual(
      record.history.map((h) => h.status),
      ['PREPARED', 'OPERATION_PENDING', 'SIGNING'],
    );
    assert.deepEqual(record.deposit, { txHash: '0x2', amount: '5' });
  });

  it('when the same signature or the same txHash comes again, then the validator rejects it as DuplicateUpdate carrying the answer, and no Update is recorded', async () => {
    const { handle, workflowId } = await start();
    await handle.executeUpdate(recordDepositUpdate, { args: [{ txHash: '0x3' }] });
    await handle.executeUpdate(submitSignatureUpdate, { args: [submitArgs()] });
    const before = await eventTypes(env, workflowId);
    const submitAgain = await rejection(handle.executeUpdate(submitSignatureUpdate, { args: [submitArgs()] }));
    assert.equal(submitAgain.type, ExecutionFailure.duplicate);
    submitAnswered(submitAgain.details?.[0] as SubmitSignatureResult, 'SIGNING');
    const depositAgain = await rejection(handle.executeUpdate(recordDepositUpdate, { args: [{ txHash: '0x3' }] }));
    assert.equal(depositAgain.type, ExecutionFailure.duplicate);
    assert.equal((depositAgain.details?.[0] as { status: string }).status, 'SIGNING');
    assert.deepEqual(updateEvents(await eventTypes(env, workflowId)), updateEvents(before));
  });

  it('when another signature comes after one was stored, then the validator rejects it as SignatureConflict', async () => {
    const { handle } = await start();
    await handle.executeUpdate(submitSignatureUpdate, { args: [submitArgs()] });
    assert.equal(
      (await rejection(handle.executeUpdate(submitSignatureUpdate, { args: [submitArgs(`0x${'b'.repeat(128)}`)] }))).type,
      ExecutionFailure.signatureConflict,
    );
  });

  it('when another txHash comes after a deposit, then it is refused and recorded for refund once; sent again, it is refused with no Update recorded', async () => {
    const { handle, workflowId } = await start();
    await handle.executeUpdate(recordDepositUpdate, { args: [{ txHash: '0x4' }] });
    assert.equal(
      (await rejection(handle.executeUpdate(recordDepositUpdate, { args: [{ txHash: '0x5' }] }))).type,
      ExecutionFailure.depositRefused,
    );
    const before = await eventTypes(env, workflowId);
    assert.equal(
      (await rejection(handle.executeUpdate(recordDepositUpdate, { args: [{ txHash: '0x5' }] }))).type,
      ExecutionFailure.depositRefused,
    );
    assert.deepEqual(updateEvents(await eventTypes(env, workflowId)), updateEvents(before));
    assert.deepEqual(
      (await handle.query(getExecutionQuery)).refusedDeposits.map((r) => [r.txHash, r.reason]),
      [['0x5', 'other-tx']],
    );
  });

  it('when no deposit comes before expiresAt, then it is EXPIRED (in skipped time), a submit is refused as ExecutionExpired, and a late deposit is refused and recorded for refund', async () => {
    const { handle } = await start({ ttlMs: DAY });
    await env.sleep(DAY + HOUR);
    const record = await handle.query(getExecutionQuery);
    assert.equal(record.status, 'EXPIRED');
    assert.deepEqual(
      record.history.map((h) => h.status),
      ['PREPARED', 'EXPIRED'],
    );
    assert.equal((await rejection(handle.executeUpdate(submitSignatureUpdate, { args: [submitArgs()] }))).type, ExecutionFailure.expired);
    assert.equal(
      (await rejection(handle.executeUpdate(recordDepositUpdate, { args: [{ txHash: '0x6' }] }))).type,
      ExecutionFailure.depositRefused,
    );
    assert.deepEqual(
      (await handle.query(getExecutionQuery)).refusedDeposits.map((r) => r.reason),
      ['expired'],
    );
  });

  it('when the deposit is in but no signature comes, then it stays OPERATION_PENDING past expiresAt (never EXPIRED while it has no signing deadline, as runs of older builds) and still signs', async () => {
    const { handle } = await start({ ttlMs: HOUR });
    await handle.signal(depositCompletedSignal, { txHash: '0x7' });
    await env.sleep(3 * DAY);
    assert.equal((await handle.query(getExecutionQuery)).status, 'OPERATION_PENDING');
    submitAnswered(await handle.executeUpdate(submitSignatureUpdate, { args: [submitArgs()] }), 'SIGNING');
  });

  it('when the deposit is in and no signature comes before the signing deadline, then it is EXPIRED (in skipped time), closes, and owes its deposit back (unsigned-by-deadline)', async () => {
    const { handle, workflowId } = await start({ ttlMs: HOUR, lingerSeconds: 0, signingDeadlineSeconds: 2 * 24 * 3600 });
    await handle.signal(depositCompletedSignal, { txHash: '0xd1', amount: '5' });
    const pending = await handle.query(getExecutionQuery);
    assert.equal(pending.status, 'OPERATION_PENDING');
    assert.equal(Date.parse(pending.signingDeadline!) - Date.parse(pending.history[1].at), 2 * DAY);
    await env.sleep(DAY);
    assert.equal((await handle.query(getExecutionQuery)).status, 'OPERATION_PENDING');
    const result = (await handle.result()) as ExecutionRecord;
    assert.equal(result.status, 'EXPIRED');
    assert.deepEqual(
      result.history.map((h) => h.status),
      ['PREPARED', 'OPERATION_PENDING', 'EXPIRED'],
    );
    assert.equal(result.deposit?.refundDue, true);
    assert.equal((await handle.describe()).status.name, 'COMPLETED');
    const rows = await new RefundLedger(database).ofExecution(workflowId);
    assert.deepEqual(
      rows.map((r) => [r.txHash, r.amount, r.reason, r.state]),
      [['0xd1', '5', 'unsigned-by-deadline', 'due']],
    );
    assert.equal((await store.getMany([workflowId])).get(workflowId)?.status, 'EXPIRED');
  });

  it('when the signing deadline comes before expiresAt, then the deposit starts a timer of its own and the execution is EXPIRED at the deadline; a deadline after expiresAt is one timer more only once expiresAt has passed unsigned', async () => {
    const early = await start({ ttlMs: 3 * DAY, lingerSeconds: 0, signingDeadlineSeconds: 3600 });
    await early.handle.signal(depositCompletedSignal, { txHash: '0xd3' });
    await env.sleep(2 * HOUR);
    assert.equal((await early.handle.query(getExecutionQuery)).status, 'EXPIRED');
    const timers = async (workflowId: string) => (await eventTypes(env, workflowId)).filter((t) => t === 'TIMER_STARTED').length;
    assert.equal(await timers(early.workflowId), 2, 'the expiry timer and the deadline timer');
    const late = await start({ ttlMs: HOUR, lingerSeconds: 0, signingDeadlineSeconds: 2 * 3600 });
    await late.handle.signal(depositCompletedSignal, { txHash: '0xd4' });
    // The Update's workflow task comes after the signal's: every command so far is in the history.
    submitAnswered(await late.handle.executeUpdate(submitSignatureUpdate, { args: [submitArgs()] }), 'SIGNING');
    await env.sleep(3 * HOUR);
    assert.equal(await timers(late.workflowId), 1, 'signed before expiresAt: one timer in all');
  });

  it('when the signature comes before the signing deadline, then it is SIGNING and the deadline does nothing', async () => {
    const { handle } = await start({ ttlMs: HOUR, signingDeadlineSeconds: 3600 });
    await handle.signal(depositCompletedSignal, { txHash: '0xd2' });
    submitAnswered(await handle.executeUpdate(submitSignatureUpdate, { args: [submitArgs()] }), 'SIGNING');
    await env.sleep(2 * HOUR);
    assert.equal((await handle.query(getExecutionQuery)).status, 'SIGNING');
  });

  it('when SIGNING, then the workflow lingers lingerSeconds to answer retries, then completes with the record', async () => {
    const { handle } = await start({ lingerSeconds: 7 * 24 * 3600 });
    await handle.signal(depositCompletedSignal, { txHash: '0x8' });
    await handle.executeUpdate(submitSignatureUpdate, { args: [submitArgs()] });
    await env.sleep(6 * DAY);
    assert.equal((await handle.describe()).status.name, 'RUNNING', 'still answering after 6 days');
    const result = await handle.result(); // skips the rest of the linger
    assert.equal(result.status, 'SIGNING');
    assert.equal((await handle.describe()).status.name, 'COMPLETED');
  });

  it('when EXPIRED, then the workflow lingers too and completes EXPIRED', async () => {
    const { handle } = await start({ ttlMs: HOUR, lingerSeconds: 3600 });
    const result = await handle.result();
    assert.equal(result.status, 'EXPIRED');
  });

  it('when a PREPARED execution is cancelled, then it is CANCELLED, the read model holds the record, and a cancel again is rejected as a duplicate with no Update recorded', async () => {
    const { handle, workflowId } = await start();
    const record = await handle.executeUpdate(cancelExecutionUpdate, { args: [{ requestedBy: 'test' }] });
    assert.equal(record.status, 'CANCELLED');
    assert.deepEqual(
      record.history.map((h) => h.status),
      ['PREPARED', 'CANCELLED'],
    );
    const before = await eventTypes(env, workflowId);
    const again = await rejection(handle.executeUpdate(cancelExecutionUpdate, { args: [{}] }));
    assert.equal(again.type, ExecutionFailure.duplicate);
    assert.equal((again.details?.[0] as { status: string }).status, 'CANCELLED');
    assert.deepEqual(updateEvents(await eventTypes(env, workflowId)), updateEvents(before));
    assert.equal((await rejection(handle.executeUpdate(submitSignatureUpdate, { args: [submitArgs()] }))).type, ExecutionFailure.cancelled);
    assert.equal(
      (await rejection(handle.executeUpdate(recordDepositUpdate, { args: [{ txHash: '0xc1' }] }))).type,
      ExecutionFailure.depositRefused,
    );
    await handle.signal(depositCompletedSignal, { txHash: '0xc2' });
    const final = await handle.query(getExecutionQuery);
    assert.deepEqual(
      final.refusedDeposits.map((r) => [r.txHash, r.reason]),
      [
        ['0xc1', 'cancelled'],
        ['0xc2', 'cancelled'],
      ],
    );
    const result = await handle.result(); // the linger passes in skipped time; the read model catches up before the close
    assert.equal(result.status, 'CANCELLED');
    assert.deepEqual(await store.get('wallet', record.executionId), result);
  });

  it('when an OPERATION_PENDING execution is cancelled, then the deposit is marked refundDue; SIGNING and EXPIRED refuse a cancel as CancelRefused', async () => {
    const pending = await start();
    await pending.handle.signal(depositCompletedSignal, { txHash: '0x9' });
    const cancelled = await pending.handle.executeUpdate(cancelExecutionUpdate, { args: [{}] });
    assert.deepEqual(cancelled.deposit, { txHash: '0x9', refundDue: true });

    const signing = await start();
    await signing.handle.signal(depositCompletedSignal, { txHash: '0xa' });
    await signing.handle.executeUpdate(submitSignatureUpdate, { args: [submitArgs()] });
    const refusedSigning = await rejection(signing.handle.executeUpdate(cancelExecutionUpdate, { args: [{}] }));
    assert.equal(refusedSigning.type, ExecutionFailure.cancelRefused);
    assert.deepEqual(refusedSigning.details, ['SIGNING']);

    const expired = await start({ ttlMs: HOUR });
    await env.sleep(2 * HOUR);
    assert.deepEqual((await rejection(expired.handle.executeUpdate(cancelExecutionUpdate, { args: [{}] }))).details, ['EXPIRED']);
  });
});
