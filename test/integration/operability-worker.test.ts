import assert from 'node:assert/strict';
import { networkInterfaces } from 'node:os';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import pino from 'pino';
import type { RunningApi } from '../../api/server';
import { toChecksumAddress } from '../../domain/eoa';
import { ownerOf } from '../../domain/rendezvous';
import { ownerKey, type WhitelistChange } from '../../domain/whitelist-messages';
import { whitelistBatchWorkflowId } from '../../contracts/temporal';
import { eventually } from '../support/executions';
import { request } from '../support/http';
import { freePort } from '../support/ports';
import { metricSum, scrape } from '../support/prometheus';
import { temporalCoreMetricNames } from '../support/temporal-core-metrics';
import { notPinoLines } from '../support/log-lines';
import { projectRoot } from '../../config/config';
import { startChildService } from '../../scripts/lib/child-service';
import { startServiceProcess, stackEnv, type ServiceProcess } from '../support/service-process';
import { getStack, startStackApi, type Stack } from '../support/stack';
import { nodeEntries, randomEoa, setFault } from '../support/whitelists';

/**
 * The worker's own process (`node dist/worker/main.js`) on a task queue of its own, fed by an API
 * in this process on the same queue, so the shared stack's worker never sees these batches.
 */
describe('operability: the worker process (metrics endpoint, drain on SIGTERM)', function () {
  this.timeout(60_000);
  let stack: Stack;
  let worker: ServiceProcess;
  let api: RunningApi;
  let nodes: string[];
  const taskQueue = `operability-worker-${process.pid}-${Date.now()}`;

  before(async function () {
    this.timeout(120_000);
    stack = await getStack();
    nodes = [stack.nodes[0].url, `http://127.0.0.1:${await freePort()}`];
    // HOST=0.0.0.0 as docs/production.md's production setup has it: the metrics must stay on loopback.
    const env = stackEnv(stack, {
      TEMPORAL_TASK_QUEUE: taskQueue,
      WORKER_METRICS_PORT: '0',
      HOST: '0.0.0.0',
      STORAGE_NODES: nodes.join(','),
    });
    worker = await startServiceProcess('worker-metrics', 'worker/main.js', `worker polling task queue ${taskQueue}`, env);
    const config = { ...stack.config, temporal: { ...stack.config.temporal, taskQueue } };
    api = await startStackApi(stack, { config, storageNodes: nodes, logger: pino({ level: 'silent' }) });
  });
  after(async () => {
    await setFault(stack.nodes[0].url, { delayMs: 0 });
    await api?.close(1000);
    await worker?.stop(15_000);
  });

  /** A change whose entry belongs to `node` among this test's nodes (one live, one dead). */
  function ownedBy(node: string): WhitelistChange {
    for (;;) {
      const change: WhitelistChange = { op_type: 'add_entry', kind: 'user', entry: toChecksumAddress(randomEoa()) };
      if (ownerOf(ownerKey(change), nodes) === node) return change;
    }
  }
  const batch = (changes: WhitelistChange[], headers: Record<string, string> = {}) =>
    request(api.url, 'POST', '/chain/whitelists/', { token: stack.tokens.all, json: changes, headers });

  it('when HOST is 0.0.0.0 and OPERATOR_HOST is unset, then the worker metrics listen on loopback only', async () => {
    const { hostname, port } = new URL(worker.url);
    assert.equal(hostname, '127.0.0.1', `metrics at ${worker.url}`);
    // Every other address of this machine is refused (when it has one: a bare container may not).
    const others = Object.values(networkInterfaces())
      .flat()
      .filter((i) => i !== undefined && !i.internal && i.family === 'IPv4')
      .map((i) => i!.address);
    for (const address of others) {
      const refused = await fetch(`http://${address}:${port}/metrics`).then(
        (r) => `answered ${r.status}`,
        (err: Error & { cause?: { code?: string } }) => err.cause?.code ?? err.message,
      );
      assert.equal(refused, 'ECONNREFUSED', `metrics on ${address}`);
    }
  });

  it('when batches reach a live and a dead node, then the worker endpoint shows latency and failures by node name (node-N, never a URL), process metrics and the SDK runtime metrics', async () => {
    const [live, dead] = nodes;
    assert.equal((await batch([ownedBy(live)])).status, 200);
    assert.equal((await batch([ownedBy(dead)])).status, 500);
    const samples = await scrape(worker.url);
    assert.ok(metricSum(samples, 'intent_storage_node_request_duration_seconds_count', { node: 'node-1', outcome: 'ok' }) >= 1);
    assert.ok(metricSum(samples, 'intent_storage_node_request_duration_seconds_count', { node: 'node-2', outcome: 'failed' }) >= 1);
    assert.ok(metricSum(samples, 'intent_storage_node_failures_total', { node: 'node-2', reason: 'NodeUnreachable' }) >= 1);
    assert.equal(metricSum(samples, 'intent_storage_node_failures_total', { node: 'node-1' }), 0);
    const named = samples.filter((s) =>
      Object.values(s.labels).some((v) => v.includes('://') || nodes.some((n) => v.includes(new URL(n).host))),
    );
    assert.deepEqual(named, [], 'no metric label names a node by its address');
    assert.ok(metricSum(samples, 'process_cpu_user_seconds_total') > 0);
    const sdk = samples.filter((s) => s.name.startsWith('temporal_'));
    assert.ok(
      sdk.some((s) => s.labels.task_queue === taskQueue),
      `SDK metrics for the task queue: ${[...new Set(sdk.map((s) => s.name))].join(', ')}`,
    );
    // The alert rules' test knows the core's metrics from its sources: every one served here is among them.
    const known = new Set(temporalCoreMetricNames());
    assert.deepEqual(
      [...new Set(sdk.map((s) => s.name))].filter((name) => !known.has(name)),
      [],
    );
  });

  it('when SIGTERM arrives while an activity waits on a slow node, then the worker lets it complete and exits 0', async () => {
    const [live] = nodes;
    // The deadline leaves room for a loaded machine to start the workflow (a start that misses it is a 500).
    await setFault(live, { delayMs: 4000 });
    const res = await batch([ownedBy(live)], { timeout: '1500' });
    assert.equal(res.status, 408, res.text);
    // The first round (a local activity) stopped at the deadline; the late node is now retried by
    // a regular activity. Signal once the worker has started it.
    const handle = stack.client.workflow.getHandle(whitelistBatchWorkflowId(res.headers.get('x-batch-id')!));
    const started = async () =>
      (await handle.describe()).raw.pendingActivities?.some(
        (a) =>
          a.activityType?.name === 'applyToNode' && a.state === temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED,
      );
    await eventually(started, 10_000, 50); // the retry activity started within 10 s
    const signalled = Date.now();
    worker.child.kill('SIGTERM');
    assert.equal(await worker.exited, 0);
    assert.ok(Date.now() - signalled >= 1000, 'the worker waited for the running activity');
    await worker.logComplete; // the last lines can be read after the exit event
    const msgs = worker.log.map((l) => l.msg);
    assert.ok(msgs.includes('worker draining') && msgs.includes('worker stopped'), msgs.join(' | '));

    const history = await handle.fetchHistory();
    const completed = (history.events ?? []).filter((e) => e.activityTaskCompletedEventAttributes);
    assert.equal(completed.length, 1, 'the slow applyToNode completed');
  });

  it('when SIGTERM arrives while the first round of a batch (a local activity) waits on a slow node, then the worker finishes it: the batch is answered 200 and the worker exits 0', async () => {
    const [live] = nodes;
    const env = stackEnv(stack, { TEMPORAL_TASK_QUEUE: taskQueue, WORKER_METRICS_PORT: '0' });
    const second = await startServiceProcess('worker-metrics-2', 'worker/main.js', `worker polling task queue ${taskQueue}`, env);
    try {
      await setFault(live, { delayMs: 2500 });
      const change = ownedBy(live);
      const answer = batch([change], { timeout: '9000' });
      // Signal once the first round runs: the slow node applies the change durably, then waits
      // 2.5 s to answer, so the first round's local activity is in flight when the entry is there.
      await eventually(async () => (await nodeEntries(live, change.kind)).includes(change.entry), 5000, 20);
      second.child.kill('SIGTERM');
      const res = await answer;
      assert.equal(res.status, 200, res.text);
      assert.equal(await second.exited, 0);
      const history = await stack.client.workflow.getHandle(whitelistBatchWorkflowId(res.headers.get('x-batch-id')!)).fetchHistory();
      const types = (history.events ?? []).map((e) => e.eventType);
      assert.equal(
        types.filter((t) => t === temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED).length,
        1,
        'one workflow task, not retried elsewhere',
      );
      assert.ok(types.includes(temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED));
    } finally {
      await setFault(live, { delayMs: 0 });
      await second.stop(15_000);
    }
  });

  it('when its read model does not answer and LOG_LEVEL is warn, then every line the worker writes is pino JSON (time, pid, level), its read model errors among them, and none is below warn but its start and stop lines', async () => {
    const lines: string[] = [];
    const env = stackEnv(stack, {
      // A queue of its own, unversioned: it must not take the stack's tasks or touch its deployment.
      TEMPORAL_TASK_QUEUE: `${taskQueue}-log`,
      WORKER_VERSIONING: 'off',
      WORKER_METRICS_PORT: '0',
      LOG_LEVEL: 'warn',
      DATABASE_URL: `postgres://intent@127.0.0.1:${await freePort()}/gone`,
    });
    const child = startChildService('worker-log', process.execPath, [path.join(projectRoot, 'dist', 'worker', 'main.js')], {
      readyPattern: /"msg":"read model catch-up failed/,
      env,
      echo: false,
      onLine: (line) => lines.push(line),
    });
    try {
      await child.ready;
    } finally {
      await child.stop(15_000);
    }
    assert.deepEqual(notPinoLines(lines), []);
    const log = lines.map((line) => JSON.parse(line) as { level: number; msg: string; err?: unknown });
    const unavailable = log.find((l) => l.msg === 'read model unavailable; its writes wait until it is back');
    assert.equal(unavailable?.level, 50, 'the read model error, at error');
    assert.equal(typeof unavailable?.err, 'string');
    const lifecycle = /^(worker metrics listening|worker polling task queue .+|worker draining|worker stopped)$/;
    assert.deepEqual(
      log.filter((l) => l.level < 40 && !lifecycle.test(l.msg)).map((l) => l.msg),
      [],
      'LOG_LEVEL=warn keeps info lines out',
    );
  });
});
