import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createActivities } from '../../activities';
import {
  EXECUTION_WORKFLOW_TYPE,
  depositCompletedSignal,
  executionWebhooksWorkflowId,
  submitSignatureUpdate,
} from '../../contracts/temporal';
import type { WebhookDelivery } from '../../contracts/webhooks';
import { openDatabase, type Database } from '../../db/database';
import { ExecutionStore } from '../../db/execution-store';
import { RefundLedger } from '../../db/refund-ledger';
import { TokenStore } from '../../tokens/token-store';
import { executionInput, submitArgs } from '../support/execution-inputs';
import { testNodeTransport } from '../support/node-keys';
import { eventTypes, timeSkippingEnv, workflowWorker } from './env';

const HOUR = 3_600_000;

// An execution closes at its final status once its read model and its webhooks are out, and a
// receiver that is down does not keep it open: its webhooks move to a workflow of their own.
describe('workflow: an execution closes when it finishes (time-skipping test server)', function () {
  this.timeout(120_000);
  let env: TestWorkflowEnvironment;
  let stopWorker: () => Promise<void>;
  let database: Database;
  let store: ExecutionStore;
  const taskQueue = `wf-close-${randomUUID()}`;
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'intent-service-wf-close-'));
  /** Webhook ids the receiver took, in the order it took them; it refuses while `failing` > 0. */
  const received: string[] = [];
  let failing = 0;

  before(async () => {
    env = await timeSkippingEnv();
    database = await openDatabase({ sqliteFile: path.join(tmp, 'read-model.sqlite') });
    store = new ExecutionStore(database);
    const activities = createActivities({
      tokens: new TokenStore(path.join(tmp, 'tokens.json')),
      nodeRequestTimeoutMs: 1000,
      nodeTransport: testNodeTransport(),
      executions: store,
      refunds: new RefundLedger(database),
    });
    const deliverWebhook = async (delivery: WebhookDelivery): Promise<void> => {
      if (failing > 0) {
        failing--;
        throw ApplicationFailure.retryable('receiver down', 'WebhookFailed');
      }
      received.push(delivery.webhookId);
    };
    stopWorker = (await workflowWorker(env, taskQueue, { ...activities, deliverWebhook })).stop;
  });
  after(async () => {
    await stopWorker?.();
    await env?.teardown();
    await database?.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  async function signed(webhooks: boolean) {
    const { workflowId, input } = executionInput(await env.currentTimeMs(), { ttlMs: HOUR, lingerSeconds: 0, webhooks });
    const handle = await env.client.workflow.start(EXECUTION_WORKFLOW_TYPE, { workflowId, taskQueue, args: [input] });
    await handle.signal(depositCompletedSignal, { txHash: '0x1' });
    const answer = await handle.executeUpdate(submitSignatureUpdate, { args: [submitArgs(`0x${'a'.repeat(128)}`)] });
    assert.equal(answer.status, 'SIGNING');
    return { handle, workflowId, input, answer };
  }

  it('when an execution reaches SIGNING with lingerSeconds 0, then its workflow completes with the final record, the record its submit answered for the caller to write; the workflow wrote the change the signal made', async () => {
    const { handle, input, answer } = await signed(false);
    const result = await handle.result();
    assert.equal(result.status, 'SIGNING');
    assert.equal((await handle.describe()).status.name, 'COMPLETED');
    assert.deepEqual(answer.record, result);
    assert.equal((await store.get(input.wallet, input.executionId))?.status, 'OPERATION_PENDING');
  });

  it('when the webhook receiver answers, then the execution delivers every status change itself, in order, and starts no other workflow', async () => {
    received.length = 0;
    const { handle, workflowId } = await signed(true);
    await handle.result();
    assert.deepEqual(received, [`${workflowId}:1`, `${workflowId}:2`, `${workflowId}:3`]);
    assert.equal((await eventTypes(env, workflowId)).includes('START_CHILD_WORKFLOW_EXECUTION_INITIATED'), false);
  });

  it('when the webhook receiver is down past the wait, then the execution closes anyway and a webhooks workflow delivers every status change, in order, once it is back', async () => {
    received.length = 0;
    // About 17 minutes of back-off in skipped time: longer than the execution waits for its webhooks.
    failing = 10;
    const { handle, workflowId, input } = await signed(true);
    const result = await handle.result();
    assert.equal(result.status, 'SIGNING');
    assert.deepEqual(await store.get(input.wallet, input.executionId), result, 'the read model holds the final record before the close');
    assert.ok(failing > 0, `the execution closed before the receiver came back (${failing} refusals left)`);
    const webhooks = env.client.workflow.getHandle(executionWebhooksWorkflowId(workflowId));
    assert.equal(await webhooks.result(), 3);
    // At least once, in order: the attempt in flight at the handover may also land, with the same id.
    assert.deepEqual([...new Set(received)], [`${workflowId}:1`, `${workflowId}:2`, `${workflowId}:3`]);
  });
});
