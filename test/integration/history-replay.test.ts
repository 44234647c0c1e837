import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { WorkflowNotFoundError } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import {
  WHITELIST_BATCH_WORKFLOW_TYPE,
  WHITELIST_REPAIR_WORKFLOW_TYPE,
  serviceTaskQueues,
  depositCompletedSignal,
  depositReorgedSignal,
  executionWorkflowId,
  whitelistBatchWorkflowId,
  whitelistRepairWorkflowId,
  type WhitelistBatchInput,
} from '../../contracts/temporal';
import {
  cancelBody,
  cancelHttp,
  depositHttp,
  eventually,
  getExecution,
  newWallet,
  prepare,
  sampleIntent,
  signedBody,
  submit,
} from '../support/executions';
import { getStack, type Stack } from '../support/stack';
import { changeOwnedBy, postBatch, setFault } from '../support/whitelists';
import { FIXTURES, replayHistories, replayOptions } from '../support/history-replay';

/**
 * Drives one execution down each path of the state machine and one batch to each outcome, so that
 * the live replay below has every kind of history whatever ran before it (the file runs in any order).
 */
async function makeHistories(stack: Stack): Promise<{ executions: number; batches: number }> {
  const paths: Array<(wallet: ReturnType<typeof newWallet>, executionId: string, intent: unknown) => Promise<void>> = [
    async () => undefined, // PREPARED, still running
    async (w, id) => void (await depositHttp(stack, w.id, id, { txHash: `0x${id}` })), // OPERATION_PENDING
    async (w, id, intent) => {
      await depositHttp(stack, w.id, id, { txHash: `0x${id}` });
      await submit(stack, w.id, signedBody(w, id, intent)); // SIGNING
      await submit(stack, w.id, signedBody(w, id, intent, { timestamp: Math.floor(Date.now() / 1000) - 5 })); // 409, other signature
    },
    async (w, id, intent) => {
      await submit(stack, w.id, signedBody(w, id, intent)); // signed while PREPARED
      await stack.client.workflow.getHandle(executionWorkflowId(w.id, id)).signal(depositCompletedSignal, { txHash: `0x${id}` }); // → SIGNING
    },
    async (w, id) => {
      await depositHttp(stack, w.id, id, { txHash: `0x${id}` });
      await depositHttp(stack, w.id, id, { txHash: '0xother' }); // refused, recorded
    },
    async (w, id) => {
      assert.equal((await cancelHttp(stack.api.url, w.id, id, cancelBody(w, id))).status, 200); // PREPARED → CANCELLED
      assert.equal((await cancelHttp(stack.api.url, w.id, id, cancelBody(w, id))).status, 200); // again: nothing written
      assert.equal((await depositHttp(stack, w.id, id, { txHash: '0xlate' })).status, 409); // refused, recorded
    },
    async (w, id, intent) => {
      await depositHttp(stack, w.id, id, { txHash: `0x${id}` });
      assert.equal((await cancelHttp(stack.api.url, w.id, id, cancelBody(w, id))).status, 200); // OPERATION_PENDING → CANCELLED, refundDue
      assert.equal((await submit(stack, w.id, signedBody(w, id, intent))).status, 409);
      // Refused and recorded if the run is still closing; once it has closed, Temporal refuses the signal.
      await stack.client.workflow
        .getHandle(executionWorkflowId(w.id, id))
        .signal(depositCompletedSignal, { txHash: '0xsignal' })
        .catch((err: unknown) => assert.ok(err instanceof WorkflowNotFoundError, String(err)));
    },
    async (w, id) => {
      // As the chain watcher signals: a deposit with its block and index, later reorganised away.
      const handle = stack.client.workflow.getHandle(executionWorkflowId(w.id, id));
      const deposit = { txHash: `0x${id}`, chain: 'evm:31337', amount: '1000', blockNumber: 12, transferIndex: 0 };
      await handle.signal(depositCompletedSignal, deposit);
      await eventually(async () => (await getExecution(stack, w.id, id)).body?.result?.status === 'OPERATION_PENDING', 15_000, 100);
      await handle.signal(depositReorgedSignal, {
        txHash: deposit.txHash,
        transferIndex: 0,
        chain: deposit.chain,
        blockNumber: 12,
        blockHash: '0xab',
      });
      await eventually(async () => (await getExecution(stack, w.id, id)).body?.result?.deposit?.reorged === true, 15_000, 100);
    },
  ];
  const runs = paths.map(async (path) => {
    const wallet = newWallet();
    const executionId = `replay-${randomUUID()}`;
    const intent = sampleIntent();
    assert.equal((await prepare(stack, wallet, { executionId, intent })).status, 201);
    await path(wallet, executionId, intent);
  });
  // Expiry, then a deposit refused as late.
  const expiring = (async () => {
    const wallet = newWallet();
    const executionId = `replay-expire-${randomUUID()}`;
    assert.equal((await prepare(stack, wallet, { executionId, ttlSeconds: 1 })).status, 201);
    await eventually(async () => (await getExecution(stack, wallet.id, executionId)).body?.result?.status === 'EXPIRED', 15_000, 200);
    await depositHttp(stack, wallet.id, executionId, { txHash: '0xlate' });
  })();
  await Promise.all([...runs, expiring]);

  const nodes = stack.nodes.map((n) => n.url);
  const spread = () => nodes.map((n) => changeOwnedBy(stack, n));
  assert.equal((await postBatch(stack, spread())).status, 200);
  await setFault(nodes[1], { delayMs: 1500 });
  try {
    assert.equal((await postBatch(stack, spread(), { headers: { timeout: '300' } })).status, 408);
  } finally {
    await setFault(nodes[1], { delayMs: 0 });
  }
  await setFault(nodes[2], { fault: 'http500' });
  try {
    assert.equal((await postBatch(stack, spread(), { headers: { timeout: '20000' } })).status, 500);
  } finally {
    await setFault(nodes[2], { fault: 'none' });
  }
  // A batch with three copies of each entry (this stack's API sends one), one node late: 200 at a
  // majority, the late node completed afterwards; and one anti-entropy pass.
  const replicated = async () => {
    const batchId = randomUUID();
    const changes = spread();
    const input: WhitelistBatchInput = {
      batchId,
      tokenId: 'all',
      changes,
      nodes,
      replicas: 3,
      replicaIndexes: changes.map((_, i) => [i, (i + 1) % 3, (i + 2) % 3]),
      deadlineMs: 400,
    };
    const handle = await stack.client.workflow.start(WHITELIST_BATCH_WORKFLOW_TYPE, {
      workflowId: whitelistBatchWorkflowId(batchId),
      taskQueue: stack.config.temporal.taskQueue,
      args: [input],
    });
    await handle.result();
  };
  await setFault(nodes[1], { delayMs: 1500 });
  try {
    await replicated();
  } finally {
    await setFault(nodes[1], { delayMs: 0 });
  }
  await stack.client.workflow.execute(WHITELIST_REPAIR_WORKFLOW_TYPE, {
    workflowId: whitelistRepairWorkflowId(stack.config.temporal.taskQueue, randomUUID()),
    taskQueue: stack.config.temporal.taskQueue,
    args: [],
  });
  return { executions: paths.length + 1, batches: 4 };
}

describe('replay: recorded workflow histories replay without nondeterminism', () => {
  let stack: Stack;
  let made: { executions: number; batches: number };
  before(async function () {
    this.timeout(120_000);
    stack = await getStack();
    made = await makeHistories(stack);
  });

  it("when every history on the test task queues (this file's, and whatever ran before) is replayed with the current workflow code, then none fails", async function () {
    this.timeout(120_000);
    const query = serviceTaskQueues(stack.config.temporal.taskQueue)
      .map((q) => `TaskQueue = '${q}'`)
      .join(' OR ');
    const histories = stack.client.workflow.list({ query }).intoHistories();
    const { seen, failures } = await replayHistories(histories, 'live-histories');
    assert.deepEqual(failures, []);
    assert.ok((seen.get('exec') ?? 0) >= made.executions, `replayed execution histories: ${JSON.stringify([...seen])}`);
    assert.ok((seen.get('whitelist-batch') ?? 0) >= made.batches, `replayed whitelist batch histories: ${JSON.stringify([...seen])}`);
  });

  it('when the histories committed under test/fixtures/histories are replayed, then none fails (the 1.0 histories of every path, recorded by npm run histories:record)', async function () {
    this.timeout(60_000);
    const files = readdirSync(FIXTURES).filter((f) => f.endsWith('.json'));
    assert.ok(files.length >= 4, `expected committed fixtures, found ${files.length}`);
    async function* fixtures() {
      for (const file of files) {
        const { workflowId, history } = JSON.parse(readFileSync(path.join(FIXTURES, file), 'utf8'));
        yield { workflowId, history };
      }
    }
    const failures: string[] = [];
    let count = 0;
    for await (const result of Worker.runReplayHistories(replayOptions('fixture-histories'), fixtures())) {
      count++;
      if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
    }
    assert.equal(count, files.length);
    assert.deepEqual(failures, []);
  });
});
