import assert from 'node:assert/strict';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { outcomeMemoPayload } from '../../api/batch-outcome-history';
import type { RunningApi } from '../../api/server';
import { confirmationOfChecksummed } from '../../domain/whitelist-messages';
import { whitelistBatchWorkflowId } from '../../workflows/definitions';
import { eventually } from '../support/executions';
import { request } from '../support/http';
import { metricSum, scrape } from '../support/prometheus';
import { getStack, startStackApi, type Stack } from '../support/stack';
import { changeOwnedBy, nodeEntries, setFault } from '../support/whitelists';

const { EventType } = temporal.api.enums.v1;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

// Decision 0015: the API runs a worker for whitelist batches on `<task queue>-batches` and starts
// each batch with requestEagerStart; the batch's first workflow task (precheck and first round)
// runs in the API process, its later activities on the workers' task queue.
describe('whitelist batches started eagerly on the API batch worker', () => {
  let stack: Stack;
  /** An API of the stack with API_BATCH_WORKER=on (the stack's own runs with the default, off). */
  let eagerApi: RunningApi;
  before(async function () {
    this.timeout(120_000);
    stack = await getStack();
    const batchTaskQueue = `${stack.config.temporal.taskQueue}-batches`;
    const config = { ...stack.config, temporal: { ...stack.config.temporal, batchTaskQueue } };
    eagerApi = await startStackApi(stack, { config });
    await eventually(async () => eagerApi.batchWorker.eager() !== undefined, 60_000);
  });
  after(async () => {
    await eagerApi?.close(2000);
  });
  afterEach(async () => {
    for (const node of stack.nodes) await setFault(node.url, { delayMs: 0, fault: 'none' });
  });

  const spread = () => stack.nodes.map((n) => changeOwnedBy(stack, n.url));
  const post = (api: RunningApi, body: unknown, headers: Record<string, string> = {}) =>
    request(api.url, 'POST', '/chain/whitelists/', {
      token: stack.tokens.all,
      json: body,
      headers: { 'content-type': 'application/json', ...headers },
    });
  const starts = async (api: RunningApi, how: string) =>
    metricSum(await scrape(`${api.operatorUrl}/metrics`), 'intent_whitelist_batch_starts_total', { how });
  const history = async (batchId: string): Promise<HistoryEvent[]> =>
    (await stack.client.workflow.getHandle(whitelistBatchWorkflowId(batchId)).fetchHistory()).events ?? [];
  const started = (events: HistoryEvent[]) => events[0].workflowExecutionStartedEventAttributes!;
  /** The outcome memo the batch wrote (decision 0015), decoded. */
  const memoOutcome = (events: HistoryEvent[]) => {
    const written = events.map(outcomeMemoPayload).filter((payload) => payload !== undefined);
    assert.equal(written.length, 1, 'one outcome memo');
    return defaultPayloadConverter.fromPayload(written[0]);
  };

  it('when the batch worker runs, then a batch starts eagerly on the batches queue, answers 200 without any activity through a queue, is counted as eager, and its node requests count in the API metrics', async () => {
    const before = await starts(eagerApi, 'eager');
    const changes = spread();
    const res = await post(eagerApi, changes);
    assert.equal(res.status, 200, res.text);
    assert.equal(await starts(eagerApi, 'eager'), before + 1, 'the start came back with its first workflow task');
    const events = await history(String(res.headers.get('x-batch-id')));
    assert.equal(started(events).taskQueue?.name, `${stack.config.temporal.taskQueue}-batches`);
    assert.equal(started(events).input?.payloads?.length, 1);
    const types = events.map((e) => e.eventType);
    assert.equal(types.at(-1), EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);
    assert.equal(types.filter((t) => t === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED).length, 0, 'no activity through a queue');
    // The outcome came from the memo written with the one workflow task, not from an Update.
    assert.equal(types.filter((t) => t === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED).length, 1, 'one workflow task');
    assert.equal(types.filter((t) => t === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED).length, 0, 'no Update');
    assert.deepEqual(memoOutcome(events), { status: 200 });
    assert.deepEqual(res.body, changes.map(confirmationOfChecksummed));
    for (let i = 0; i < 3; i++) assert.ok((await nodeEntries(stack.nodes[i].url, 'developer')).includes(changes[i].entry));
    // The first round ran in the API: its node requests are in the API's metrics.
    const samples = await scrape(`${eagerApi.operatorUrl}/metrics`);
    for (const node of stack.nodes)
      assert.ok(metricSum(samples, 'intent_storage_node_request_duration_seconds_count', { node: node.url, outcome: 'ok' }) >= 1, node.url);
  });

  it('when a node is late (408), then its retry is scheduled on the workers task queue and the change lands there', async function () {
    this.timeout(30_000);
    const changes = spread();
    await setFault(stack.nodes[2].url, { delayMs: 1500 });
    const res = await post(eagerApi, changes, { timeout: '500' });
    assert.equal(res.status, 408, res.text);
    // The confirmations are those of the nodes that answered in time, rebuilt by the API from the memo.
    assert.deepEqual((res.body as { result: string[] }).result, changes.slice(0, 2).map(confirmationOfChecksummed));
    const batchId = String(res.headers.get('x-batch-id'));
    const events = await eventually(async () => {
      const all = await history(batchId);
      return all.at(-1)?.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED && all;
    }, 20_000);
    assert.equal(started(events).taskQueue?.name, `${stack.config.temporal.taskQueue}-batches`);
    const scheduled = events.filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED);
    assert.ok(scheduled.length >= 1, 'the late node got an activity');
    for (const e of scheduled) assert.equal(e.activityTaskScheduledEventAttributes?.taskQueue?.name, stack.config.temporal.taskQueue);
    assert.ok((await nodeEntries(stack.nodes[2].url, 'developer')).includes(changes[2].entry), 'the late change was applied');
    assert.deepEqual(memoOutcome(events), {
      status: 408,
      errorMessage: 'not every storage node answered within 500 ms; the rest is being retried',
      appliedNodes: [stack.nodes[0].url, stack.nodes[1].url],
    });
  });

  it('when API_BATCH_WORKER is off (the default), then batches start by update-with-start on the workers task queue, without patch markers', async () => {
    const api = stack.api;
    assert.equal(stack.config.temporal.batchTaskQueue, undefined);
    assert.equal(api.batchWorker.eager(), undefined);
    const before = await starts(api, 'update-with-start');
    const res = await post(api, spread());
    assert.equal(res.status, 200, res.text);
    assert.equal(await starts(api, 'update-with-start'), before + 1);
    assert.equal(await starts(api, 'eager'), 0);
    const events = await history(String(res.headers.get('x-batch-id')));
    assert.equal(started(events).taskQueue?.name, stack.config.temporal.taskQueue);
    assert.equal(events.filter((e) => e.eventType === EventType.EVENT_TYPE_MARKER_RECORDED).length, 1, "only the local activity's marker");
    assert.equal(events.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED).length, 1, 'one workflow task');
  });
});
