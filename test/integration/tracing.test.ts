import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { projectRoot } from '../../config/config';
import { WORKFLOW_INTERCEPTOR_MODULES, workflowSinks } from '../../worker/tracing';
import { toChecksumAddress } from '../../domain/eoa';
import { ownerOf } from '../../domain/rendezvous';
import { ownerKey, type WhitelistChange } from '../../domain/whitelist-messages';
import { whitelistBatchWorkflowId } from '../../contracts/temporal';
import { startChildService, type ChildService } from '../../scripts/lib/child-service';
import { eventually, newWallet, sampleIntent, signedBody } from '../support/executions';
import { request } from '../support/http';
import { OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver';
import { freePort } from '../support/ports';
import { ProcessStack } from '../support/process-stack';
import { startServiceProcess, type ServiceProcess } from '../support/service-process';
import { randomEoa, setFault } from '../support/whitelists';

const RECEIVER = path.join(projectRoot, 'dist', 'test', 'support', 'webhook-receiver.js');
const SERVER = 2;
const CLIENT = 3;

interface Delivery {
  id: string;
  traceparent: string | null;
  event: { data: { executionId: string; status: string } };
}

describe('integration: tracing (OTLP to a receiver of the test; API, worker, nodes and webhook receiver as real processes)', function () {
  this.timeout(180_000);
  const otlp = new OtlpReceiver();
  let stack: ProcessStack;
  let api: ServiceProcess;
  let hooks: ChildService;
  const out = path.join(os.tmpdir(), `traced-webhooks-${process.pid}-${randomUUID()}.jsonl`);
  const secret = `whsec_${randomBytes(24).toString('base64')}`;

  before(async function () {
    this.timeout(120_000);
    await otlp.start();
    const hookPort = await freePort();
    hooks = startChildService(
      'webhook-receiver',
      process.execPath,
      [RECEIVER, '--port', String(hookPort), '--secret', secret, '--out', out],
      {
        readyPattern: /listening/,
        echo: false,
      },
    );
    await hooks.ready;
    const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_BSP_SCHEDULE_DELAY: '200' };
    // The API and the worker export http/json, the nodes http/protobuf (the default): one trace either way.
    stack = await new ProcessStack({
      env: {
        ...otel,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        WEBHOOK_URLS: `http://127.0.0.1:${hookPort}/hooks`,
        WEBHOOK_SECRETS: secret,
      },
      nodeEnv: otel,
    }).start();
    // A second API of the stack whose JSON log the test reads (the stack's own API is the same build and settings).
    // It trusts loopback as its proxy (TRUST_PROXY): a caller's traceparent is continued there, and only there.
    api = await startServiceProcess('traced-api', 'api/main.js', 'api listening', {
      ...stack.env(),
      PORT: '0',
      LOG_LEVEL: 'info',
      TRUST_PROXY: 'loopback',
    });
  });
  after(async () => {
    await api?.stop(2000);
    await stack?.stop();
    await hooks?.stop(2000);
    await otlp.stop();
    rmSync(out, { force: true });
  });

  const deliveries = (): Delivery[] =>
    existsSync(out)
      ? readFileSync(out, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as Delivery)
      : [];
  const delivered = (executionId: string, status: string) =>
    eventually(async () => deliveries().find((d) => d.event.data.executionId === executionId && d.event.data.status === status), 20_000);
  const service = (s: ReceivedSpan) => s.resource['service.name'];
  /** The chain from `spanId` up to `top`, once every span of it has arrived. */
  const chainTo = (spanId: string, top: ReceivedSpan) =>
    eventually(async () => {
      const chain = otlp.chain(spanId);
      return chain.at(-1)?.spanId === top.spanId && chain;
    }, 20_000);
  function changeOwnedBy(index: number): WhitelistChange {
    const urls = stack.nodes.map((n) => n.url);
    for (;;) {
      const change: WhitelistChange = { op_type: 'add_entry', kind: 'developer', entry: toChecksumAddress(randomEoa()) };
      if (ownerOf(ownerKey(change), urls) === urls[index]) return change;
    }
  }

  it("when an execution is submitted, then one trace runs from the API's SERVER span through the Update, the workflow and its webhook activity to the receiver, whose traceparent names the worker's CLIENT span; the API's log lines of the request carry its trace_id and span_id", async () => {
    const wallet = newWallet();
    const executionId = `traced-${randomUUID()}`;
    const intent = sampleIntent();
    const call = (method: string, route: string, json: unknown, token?: string) => request(api.url, method, route, { json, token });
    assert.equal((await call('POST', `/api/v1/executions/${wallet.id}`, { executionId, intent }, stack.token)).status, 201);
    assert.equal(
      (await call('POST', `/api/v1/executions/${wallet.id}/${executionId}/deposit`, { txHash: `0x${executionId}` }, stack.token)).status,
      200,
    );
    // The SIGNING webhook is then the submit's own (each webhook starts when the one before is done).
    await delivered(executionId, 'OPERATION_PENDING');
    const body = signedBody(wallet, executionId, intent);
    const submitted = await call('POST', `/api/v1/executions/${wallet.id}/submit`, body);
    assert.equal(submitted.status, 200, submitted.text);

    const signing = await delivered(executionId, 'SIGNING');
    assert.match(signing.traceparent ?? '', /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    const [, traceId, parentId] = signing.traceparent!.split('-');
    const server = await eventually(
      async () =>
        otlp.spans.find(
          (s) =>
            s.kind === SERVER &&
            s.name === 'POST /api/v1/executions/{wallet}/submit' &&
            s.attributes['intent_service.execution_id'] === executionId,
        ),
      20_000,
    );
    assert.equal(server.traceId, traceId, 'the webhook belongs to the trace of the submit');
    assert.deepEqual(
      {
        method: server.attributes['http.request.method'],
        route: server.attributes['http.route'],
        status: server.attributes['http.response.status_code'],
        path: server.attributes['url.path'],
        wallet: server.attributes['intent_service.wallet'],
        service: service(server),
      },
      {
        method: 'POST',
        route: '/api/v1/executions/{wallet}/submit',
        status: 200,
        path: `/api/v1/executions/${wallet.id}/submit`,
        wallet: wallet.id,
        service: 'intent-service-api',
      },
    );

    const chain = await chainTo(parentId, server);
    assert.ok(chain.every((s) => s.traceId === traceId));
    assert.equal(chain[0].kind, CLIENT);
    assert.equal(service(chain[0]), 'intent-service-worker');
    const names = chain.map((s) => `${service(s)} ${s.name}`);
    for (const step of [
      'intent-service-worker RunActivity:deliverWebhook',
      'intent-service-worker StartActivity:deliverWebhook',
      'intent-service-worker HandleUpdate:submitSignature',
      'intent-service-api StartWorkflowUpdate:submitSignature',
    ])
      assert.ok(names.includes(step), `${step} in ${JSON.stringify(names)}`);
    // Nothing a span carries is a secret: no signature or token in any attribute of the trace.
    const values = otlp.spans.filter((s) => s.traceId === traceId).flatMap((s) => Object.values(s.attributes).map(String));
    assert.ok(values.length > 0);
    assert.ok(!values.some((v) => v.includes(stack.token) || v.includes(body.signature)));

    await eventually(async () => api.log.some((l) => l.msg === 'request' && l.route === '/api/v1/executions/:wallet/submit'), 5_000);
    const line = api.log.find((l) => l.msg === 'request' && l.route === '/api/v1/executions/:wallet/submit')!;
    assert.equal(line.trace_id, traceId);
    assert.equal(line.span_id, server.spanId);
  });

  it("when a batch answers 408 because a node is slow and that node applies it later, then the 408, every node's handling and the late apply are one trace: each node's SERVER span chains up to the API's SERVER span", async () => {
    const slow = stack.nodes[1];
    await setFault(slow.url, { delayMs: 1500 });
    let batchId: string;
    try {
      const res = await request(api.url, 'POST', '/chain/whitelists/', {
        token: stack.token,
        json: [0, 1, 2].map(changeOwnedBy),
        headers: { timeout: '300' },
      });
      assert.equal(res.status, 408, res.text);
      batchId = res.headers.get('x-batch-id')!;
    } finally {
      await setFault(slow.url, { delayMs: 0 });
    }
    await stack.client.workflow.getHandle(whitelistBatchWorkflowId(batchId)).result();

    const server = await eventually(
      async () =>
        otlp.spans.find(
          (s) => s.kind === SERVER && service(s) === 'intent-service-api' && s.attributes['intent_service.batch_id'] === batchId,
        ),
      20_000,
    );
    assert.equal(server.name, 'POST /chain/whitelists/');
    assert.equal(server.attributes['http.response.status_code'], 408);
    const nodeSpans = (pid: number | undefined) =>
      otlp.spans.filter(
        (s) =>
          s.kind === SERVER &&
          s.resource['service.instance.id'] === `${os.hostname()}:${pid}` &&
          s.attributes['intent_service.batch_id'] === batchId &&
          s.attributes['http.response.status_code'] === 200,
      );
    for (const node of stack.nodes) {
      const answered = await eventually(async () => nodeSpans(node.child.pid).at(-1), 20_000);
      assert.equal(answered.name, 'POST /v1/whitelists/apply');
      assert.equal(answered.traceId, server.traceId, `${node.url} in the batch's trace`);
      const chain = await chainTo(answered.spanId, server);
      assert.equal(chain[1].kind, CLIENT);
      assert.equal(chain[1].attributes['intent_service.batch_id'], batchId);
      assert.ok(chain.some((s) => s.name === 'RunWorkflow:whitelistBatchWorkflow'));
    }
    // A workflow span names its run, nothing more of the workflow's info (no memo, search attributes or results).
    const run = otlp.spans.find((s) => s.traceId === server.traceId && s.name === 'RunWorkflow:whitelistBatchWorkflow')!;
    assert.equal(run.attributes.workflowId, whitelistBatchWorkflowId(batchId));
    assert.deepEqual(
      Object.keys(run.attributes).filter((k) => ['memo', 'searchAttributes', 'lastResult', 'lastFailure'].includes(k)),
      [],
    );
    // The slow node applied after the 408 had gone out: its late apply, an activity of the same workflow.
    const late = nodeSpans(slow.child.pid).at(-1)!;
    assert.ok(late.endNs > server.endNs, 'the late apply ends after the 408');
    assert.ok(otlp.chain(late.spanId).some((s) => s.name === 'RunActivity:applyToNode'));
    assert.ok(otlp.byType.json > 0 && otlp.byType.protobuf > 0, `exports by encoding: ${JSON.stringify(otlp.byType)}`);
  });

  it("when the traced workflows' histories (their calls carry trace headers) are replayed with the worker's interceptors, then none fails: tracing keeps the workflows deterministic", async () => {
    const histories = stack.client.workflow.list({ query: `TaskQueue = '${stack.taskQueue}'` }).intoHistories();
    const failures: string[] = [];
    let count = 0;
    const options = {
      workflowsPath: require.resolve('../../workflows'),
      interceptors: { workflowModules: [...WORKFLOW_INTERCEPTOR_MODULES] },
      sinks: workflowSinks(undefined),
      replayName: 'traced-histories',
    };
    for await (const result of Worker.runReplayHistories(options, histories)) {
      count++;
      if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
    }
    assert.deepEqual(failures, []);
    assert.ok(count >= 2, `replayed ${count} histories`);
  });

  it("when a caller sends its own traceparent, then an API that does not trust it as its proxy starts a new trace linking to the caller's span; one behind a trusted proxy (TRUST_PROXY) continues it", async () => {
    const caller = () => ({ trace: randomBytes(16).toString('hex'), span: randomBytes(8).toString('hex') });
    const send = async (url: string, c: { trace: string; span: string }) => {
      const res = await fetch(`${url}/healthz`, { headers: { traceparent: `00-${c.trace}-${c.span}-01` } });
      assert.equal(res.status, 200);
    };
    const outsider = caller();
    await send(stack.apiUrl, outsider);
    const linked = await eventually(
      async () => otlp.spans.find((s) => s.kind === 2 && s.links.some((l) => l.spanId === outsider.span)),
      20_000,
    );
    assert.notEqual(linked.traceId, outsider.trace, 'a new trace');
    assert.equal(linked.parentSpanId, '', 'a root span');
    assert.deepEqual(linked.links, [{ traceId: outsider.trace, spanId: outsider.span }]);
    assert.equal(
      otlp.spans.some((s) => s.traceId === outsider.trace),
      false,
      "nothing joins the caller's trace",
    );
    const proxied = caller();
    await send(api.url, proxied);
    const continued = await eventually(async () => otlp.spans.find((s) => s.kind === 2 && s.traceId === proxied.trace), 20_000);
    assert.equal(continued.parentSpanId, proxied.span);
    assert.deepEqual(continued.links, []);
  });

  it('when the collector cannot be reached, then the API answers as before and logs that spans were not exported', async () => {
    const closedPort = await freePort();
    const env = {
      ...stack.env(),
      PORT: '0',
      LOG_LEVEL: 'info',
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${closedPort}`,
      OTEL_BSP_SCHEDULE_DELAY: '100',
    };
    const lost = await startServiceProcess('api-without-collector', 'api/main.js', 'api listening', env);
    try {
      assert.equal((await request(lost.url, 'GET', '/healthz')).status, 200);
      const line = await eventually(async () => lost.log.find((l) => l.msg === 'spans not exported'), 20_000);
      assert.equal(line.level, 40);
      assert.equal(line.url, `http://127.0.0.1:${closedPort}/v1/traces`);
      assert.ok(line.failures >= 1);
      assert.equal((await request(lost.url, 'GET', '/healthz')).status, 200);
    } finally {
      await lost.stop(2000);
    }
  });

  it("when an API runs with the OTEL_* variables unset, then it continues no trace and starts none: a caller's traceparent reaches no span, its batch makes no span in the traced worker and nodes either, and its log lines have no trace_id", async () => {
    const env: NodeJS.ProcessEnv = { ...stack.env(), PORT: '0', LOG_LEVEL: 'info' };
    for (const name of Object.keys(env)) if (name.startsWith('OTEL_')) delete env[name];
    const untraced = await startServiceProcess('untraced-api', 'api/main.js', 'api listening', env);
    try {
      const callerTrace = randomBytes(16).toString('hex');
      const res = await request(untraced.url, 'POST', '/chain/whitelists/', {
        token: stack.token,
        json: [0, 1, 2].map(changeOwnedBy),
        headers: { traceparent: `00-${callerTrace}-${randomBytes(8).toString('hex')}-01` },
      });
      assert.equal(res.status, 200, res.text);
      const batchId = res.headers.get('x-batch-id')!;
      await stack.client.workflow.getHandle(whitelistBatchWorkflowId(batchId)).result();
      // Then a batch through the traced API: once its spans are in from every node, whatever the
      // worker and the nodes would have exported for the first batch has arrived before them.
      const traced = await request(api.url, 'POST', '/chain/whitelists/', { token: stack.token, json: [0, 1, 2].map(changeOwnedBy) });
      assert.equal(traced.status, 200, traced.text);
      const tracedId = traced.headers.get('x-batch-id')!;
      await eventually(
        async () =>
          stack.nodes.every((n) =>
            otlp.spans.some(
              (s) =>
                s.kind === SERVER &&
                s.attributes['intent_service.batch_id'] === tracedId &&
                s.resource['service.instance.id'] === `${os.hostname()}:${n.child.pid}`,
            ),
          ),
        20_000,
      );
      assert.deepEqual(
        otlp.spans.filter(
          (s) => s.attributes['intent_service.batch_id'] === batchId || s.attributes.workflowId === whitelistBatchWorkflowId(batchId),
        ),
        [],
      );
      assert.ok(!otlp.spans.some((s) => s.traceId === callerTrace), "the caller's trace went nowhere");
      assert.ok(!otlp.spans.some((s) => s.resource['service.instance.id'] === `${os.hostname()}:${untraced.child.pid}`));
      await eventually(async () => untraced.log.some((l) => l.msg === 'request'), 5_000);
      assert.ok(untraced.log.every((l) => l.trace_id === undefined && l.span_id === undefined));
    } finally {
      await untraced.stop(2000);
    }
  });
});
