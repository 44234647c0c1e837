import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Worker } from '@temporalio/worker';
import pino from 'pino';
import type { RunningApi } from '../../api/server';
import type { Config } from '../../config/config';
import { toChecksumAddress } from '../../domain/eoa';
import { ownerOf } from '../../domain/rendezvous';
import { ownerKey, type WhitelistChange } from '../../domain/whitelist-messages';
import { startWorker, type RunningWorker } from '../../worker/create-worker';
import { bundleInChild, SHARED_WORKFLOW_MODULES } from '../../worker/workflow-bundle';
import { executionWorkflowId, whitelistBatchWorkflowId } from '../../contracts/temporal';
import { BUILD_MEMO } from '../fixtures/workflows-next';
import {
  depositHttp,
  eventually,
  getExecution,
  newWallet,
  prepare,
  sampleIntent,
  signedBody,
  submit,
  type TestWallet,
} from '../support/executions';
import { request } from '../support/http';
import { getStack, startStackApi, type Stack } from '../support/stack';
import { nodeEntries, randomEoa, setFault } from '../support/whitelists';

/**
 * A rollout with Worker Deployment Versioning on the dev server (decision 0068): a worker of the
 * current build runs an execution and a batch; a worker of a next build whose workflow code
 * cannot replay them starts and becomes current; the old work finishes on the old build, new
 * work runs on the next one. On a task queue and deployment of its own, with an API in this
 * process on that queue, so the shared stack's worker never sees this work.
 */
describe('versioned rollout: pinned work drains on the build that started it, new work runs on the current one', function () {
  this.timeout(120_000);
  let stack: Stack;
  let config: Config;
  let api: RunningApi;
  let current: RunningWorker;
  let next: RunningWorker | undefined;
  let nextCode: string;
  let slowNode: string;
  const taskQueue = `rollout-${randomUUID()}`;
  const deploymentName = `rollout-${randomUUID()}`;

  before(async () => {
    stack = await getStack();
    config = {
      ...stack.config,
      temporal: { ...stack.config.temporal, taskQueue },
      workerDeployment: { name: deploymentName, promote: 'current' },
    };
    current = await startWorker(config, stack.temporal.address);
    api = await startStackApi(stack, { config, logger: pino({ level: 'silent' }) });
    nextCode = await bundleInChild({
      workflowsPath: require.resolve('../fixtures/workflows-next'),
      preloadModules: [...SHARED_WORKFLOW_MODULES],
    });
    slowNode = stack.nodes[0].url;
  });
  after(async () => {
    await setFault(slowNode, { delayMs: 0 });
    await api?.close(1000);
    await next?.shutdown();
    await current?.shutdown();
  });

  // The stack's helpers address stack.api: this test's API instead.
  const viaApi = (): Stack => ({ ...stack, api: { ...stack.api, url: api.url } }) as Stack;
  const buildOf = async (workflowId: string) =>
    (await stack.client.workflow.getHandle(workflowId).describe()).raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId;
  const memoOf = async (workflowId: string) => (await stack.client.workflow.getHandle(workflowId).describe()).memo;
  function ownedBy(node: string): WhitelistChange {
    const nodes = stack.nodes.map((n) => n.url);
    for (;;) {
      const change: WhitelistChange = { op_type: 'add_entry', kind: 'user', entry: toChecksumAddress(randomEoa()) };
      if (ownerOf(ownerKey(change), nodes) === node) return change;
    }
  }
  const batch = (changes: WhitelistChange[], headers: Record<string, string> = {}) =>
    request(api.url, 'POST', '/chain/whitelists/', { token: stack.tokens.all, json: changes, headers });
  async function prepared(wallet: TestWallet) {
    const executionId = `ex-${randomUUID()}`;
    const intent = sampleIntent();
    const res = await prepare(viaApi(), wallet, { executionId, intent });
    assert.equal(res.status, 201, res.text);
    return { executionId, intent };
  }

  it('when a next build becomes current while an execution waits for its deposit and a batch retries a late node, then both finish on the build that started them, new work runs on the next build, and the next build could not have replayed the old work', async () => {
    const built = current.version?.buildId;
    assert.ok(built, 'the worker is a version of its deployment');
    assert.match(built, /^1\.0\.0-[0-9a-f]{12}$/, 'build id: the package version and the bundle hash');

    // Work started on the current build: an execution waiting for its deposit, a batch whose node is late.
    const wallet = newWallet();
    const old = await prepared(wallet);
    const oldExecution = executionWorkflowId(wallet.id, old.executionId);
    await setFault(slowNode, { delayMs: 3000 });
    const late = ownedBy(slowNode);
    const lateBatch = await batch([late], { timeout: '1000' });
    assert.equal(lateBatch.status, 408, lateBatch.text);
    const oldBatch = whitelistBatchWorkflowId(lateBatch.headers.get('x-batch-id')!);

    // The next build starts and makes itself current.
    next = await startWorker(config, stack.temporal.address, { workflowBundle: { code: nextCode } });
    await next.promoted;
    const nextBuild = next.version?.buildId;
    assert.ok(nextBuild && nextBuild !== built, `a new build id for new workflow code (${nextBuild})`);
    const deployment = await stack.client.connection.workflowService.describeWorkerDeployment({
      namespace: config.temporal.namespace,
      deploymentName,
    });
    assert.equal(deployment.workerDeploymentInfo?.routingConfig?.currentDeploymentVersion?.buildId, nextBuild);

    // The old work finishes where it started.
    await setFault(slowNode, { delayMs: 0 });
    const oldResult = await stack.client.workflow.getHandle(oldBatch).result();
    assert.deepEqual(Object.values(oldResult.nodes), ['applied'], 'the late node applied after the rollout');
    assert.ok((await nodeEntries(slowNode, 'user')).includes(late.entry));
    assert.equal((await depositHttp(viaApi(), wallet.id, old.executionId, { txHash: `0x${'d'.repeat(64)}` })).status, 200);
    const signed = await submit(viaApi(), wallet.id, signedBody(wallet, old.executionId, old.intent));
    assert.equal(signed.status, 200, signed.text);
    assert.deepEqual(signed.body, { result: { status: 'SIGNING' } });
    for (const id of [oldExecution, oldBatch]) {
      assert.equal(await buildOf(id), built, `${id} stayed on the build that started it`);
      assert.equal((await memoOf(id))?.[BUILD_MEMO.key], undefined, `${id} never ran the next build's code`);
    }

    // New work runs on the next build.
    const newWallet2 = newWallet();
    const fresh = await prepared(newWallet2);
    const freshExecution = executionWorkflowId(newWallet2.id, fresh.executionId);
    const freshBatch = await batch([ownedBy(stack.nodes[1].url)]);
    assert.equal(freshBatch.status, 200, freshBatch.text);
    for (const id of [freshExecution, whitelistBatchWorkflowId(freshBatch.headers.get('x-batch-id')!)]) {
      assert.equal(await buildOf(id), nextBuild, `${id} started on the current build`);
      assert.equal((await memoOf(id))?.[BUILD_MEMO.key], BUILD_MEMO.value);
    }
    await eventually(async () => (await getExecution(viaApi(), newWallet2.id, fresh.executionId)).status === 200);

    // Why pinning matters: the next build fails to replay what the current build ran.
    const history = await stack.client.workflow.getHandle(oldExecution).fetchHistory();
    await assert.rejects(
      Worker.runReplayHistory({ workflowBundle: { code: nextCode } }, history, oldExecution),
      /Nondeterminism|DeterminismViolation/,
    );
  });
});
