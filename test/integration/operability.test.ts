import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Validator } from '@seriousme/openapi-schema-validator';
import pino from 'pino';
import * as executionContract from '../../api/executions/contract';
import * as whitelistContract from '../../api/whitelists/contract';
import { depositHttp, eventually, getExecution, newWallet, prepare, sampleIntent, signedBody, submit } from '../support/executions';
import { request } from '../support/http';
import { answerChecker, openApiPath } from '../support/openapi-check';
import { freePort } from '../support/ports';
import { metricSum, parseMetrics, scrape } from '../support/prometheus';
import { startServiceProcess, stackEnv } from '../support/service-process';
import { getStack, startStackApi, type Stack } from '../support/stack';
import { changeOwnedBy, nodeEntries, postBatch, restartNode, setFault } from '../support/whitelists';

const SHUTTING_DOWN = 'api shutting down: no new connections, finishing in-flight requests';

describe('operability: OpenAPI, metrics, logs, readiness, graceful shutdown', () => {
  let stack: Stack;
  let doc: any;
  before(async function () {
    this.timeout(120_000);
    stack = await getStack();
    doc = (await request(stack.api.url, 'GET', '/openapi.json')).body;
  });
  afterEach(async () => {
    for (const node of stack.nodes)
      if (node.child.exitCode === null && node.child.signalCode === null) await setFault(node.url, { delayMs: 0, fault: 'none' });
  });

  describe('GET /openapi.json', () => {
    it('when the document is fetched, then an OpenAPI 3.1 validator accepts it', async () => {
      const res = await request(stack.api.url, 'GET', '/openapi.json');
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
      const result = await new Validator().validate(res.body);
      assert.deepEqual(result.errors, undefined, JSON.stringify(result.errors, null, 2));
      assert.equal(result.valid, true);
      assert.equal(res.body.openapi, '3.1.0');
    });

    it('when the routes are read off the router, then every method and path is in the document, and nothing else is', () => {
      const registered = new Set<string>();
      for (const layer of stack.api.app.router.stack) {
        for (const method of layer.methods) if (method !== 'HEAD') registered.add(`${method} ${openApiPath(String(layer.path))}`);
      }
      const documented = new Set<string>();
      for (const [p, item] of Object.entries<Record<string, unknown>>(doc.paths))
        for (const method of Object.keys(item)) documented.add(`${method.toUpperCase()} ${p}`);
      assert.ok(registered.size >= 10, [...registered].join(', '));
      assert.deepEqual([...documented].sort(), [...registered].sort());
    });

    it('when the request schemas are compared, then they are the ones the routes validate with (batch limit from config)', () => {
      const strip = (s: object) => JSON.parse(JSON.stringify({ ...s, $id: undefined }));
      assert.deepEqual(doc.components.schemas.PrepareRequest, strip(executionContract.prepareBodySchema));
      // The submit schema, with the configured domains declared as the enum the service enforces.
      const submitSchema = strip(executionContract.submitBodySchema);
      submitSchema.properties.connectEnvelope.properties.domain.enum = [...stack.config.allowedDomains];
      assert.deepEqual(doc.components.schemas.SubmitRequest, submitSchema);
      assert.deepEqual(doc.components.schemas.DepositRequest, strip(executionContract.depositBodySchema));
      assert.deepEqual(doc.components.schemas.WhitelistChange, strip(whitelistContract.whitelistChangeSchema));
      assert.equal(doc.components.schemas.WhitelistRequest.maxItems, stack.config.request.maxBatchLen);
      assert.deepEqual(doc.components.parameters.wallet.schema, executionContract.walletParamSchema);
    });

    it('when every status the API pages (docs/api*.md) document is looked up, then each route documents it, with 413 and the whitelist 408 `result`', () => {
      const statuses = (p: string, m: string) => Object.keys(doc.paths[p][m].responses).sort();
      assert.deepEqual(statuses('/api/v1/executions/{wallet}', 'post'), [
        '200',
        '201',
        '400',
        '401',
        '403',
        '409',
        '413',
        '429',
        '500',
        '503',
      ]);
      assert.equal(doc.paths['/api/v1/executions/{wallet}'].post.responses['200'].headers['Idempotent-Replayed'].schema.const, 'true');
      assert.deepEqual(statuses('/api/v1/executions/{wallet}', 'get'), ['200', '400', '429', '500', '503']);
      assert.deepEqual(statuses('/api/v1/executions/{wallet}/{executionId}/cancel', 'post'), [
        '200',
        '400',
        '404',
        '409',
        '413',
        '429',
        '500',
        '503',
      ]);
      assert.deepEqual(statuses('/api/v1/executions/{wallet}/{executionId}/events', 'get'), [
        '200',
        '204',
        '400',
        '404',
        '429',
        '500',
        '503',
      ]);
      assert.deepEqual(doc.components.schemas.ExecutionRecord.properties.status.enum, [
        'PREPARED',
        'OPERATION_PENDING',
        'SIGNING',
        'EXPIRED',
        'CANCELLED',
      ]);
      assert.deepEqual(statuses('/api/v1/executions/{wallet}/submit', 'post'), ['200', '400', '404', '409', '413', '429', '500', '503']);
      assert.deepEqual(statuses('/api/v1/executions/{wallet}/{executionId}/deposit', 'post'), [
        '200',
        '400',
        '401',
        '403',
        '404',
        '409',
        '413',
        '429',
        '500',
        '503',
      ]);
      assert.deepEqual(statuses('/api/v1/executions/{wallet}/{executionId}', 'get'), ['200', '400', '404', '429', '500', '503']);
      for (const p of ['/chain/whitelists/', '/chain/whitelists'])
        assert.deepEqual(statuses(p, 'post'), ['200', '400', '401', '403', '408', '413', '429', '500', '503']);
      for (const s of ['429', '503'])
        assert.ok(doc.paths['/api/v1/executions/{wallet}/submit'].post.responses[s].headers['Retry-After'], `${s} documents Retry-After`);
      const links = doc.paths['/api/v1/executions/{wallet}'].post.responses['201'].links;
      assert.deepEqual(Object.keys(links).sort(), [
        'cancelExecution',
        'depositExecution',
        'executionEvents',
        'executionStatusPage',
        'getExecution',
        'setRefundAddress',
        'submitExecution',
      ]);
      assert.deepEqual(doc.paths['/api/v1/executions/{wallet}'].post.responses['200'].links, links, 'the replay links as the 201 does');
      assert.equal(links.getExecution.parameters.executionId, '$response.body#/result/executionId');
      assert.deepEqual(doc.components.schemas.WhitelistTimeout.required, ['error', 'errorMessage', 'result']);
      assert.deepEqual(statuses('/readyz', 'get'), ['200', '503']);
    });

    it('when real requests are answered, then each body matches the schema the document gives for its status', async () => {
      const check = answerChecker(doc);
      const wallet = newWallet();
      const intent = sampleIntent();
      const executionId = `ex-${randomUUID()}`;
      const prepared = await prepare(stack, wallet, { executionId, intent });
      check('/api/v1/executions/{wallet}', 'post', prepared.status, prepared.body);
      check('/api/v1/executions/{wallet}', 'post', 401, (await prepare(stack, wallet, {}, 'nope')).body);
      check('/api/v1/executions/{wallet}', 'post', 403, (await prepare(stack, wallet, {}, stack.tokens.deposit)).body);
      const big = await request(stack.api.url, 'POST', `/api/v1/executions/${wallet.id}`, {
        token: stack.tokens.all,
        json: { intent: { pad: 'x'.repeat(70_000) } },
      });
      check('/api/v1/executions/{wallet}', 'post', big.status, big.body);
      const submitted = await submit(stack, wallet.id, signedBody(wallet, executionId, intent));
      check('/api/v1/executions/{wallet}/submit', 'post', submitted.status, submitted.body);
      check(
        '/api/v1/executions/{wallet}/submit',
        'post',
        404,
        (await submit(stack, wallet.id, signedBody(wallet, 'no-such', intent))).body,
      );
      const deposited = await depositHttp(stack, wallet.id, executionId, {
        txHash: `0x${randomUUID().replace(/-/g, '')}`,
        chain: 'solana',
        amount: '10',
      });
      check('/api/v1/executions/{wallet}/{executionId}/deposit', 'post', deposited.status, deposited.body);
      assert.equal(deposited.body.result.status, 'SIGNING');
      const read = await getExecution(stack, wallet.id, executionId);
      check('/api/v1/executions/{wallet}/{executionId}', 'get', read.status, read.body);
      check('/api/v1/executions/{wallet}/{executionId}', 'get', 400, (await getExecution(stack, wallet.id, 'bad id!')).body);

      const ok = await postBatch(stack, [changeOwnedBy(stack, stack.nodes[0].url)]);
      check('/chain/whitelists/', 'post', ok.status, ok.body);
      check('/chain/whitelists/', 'post', 400, (await postBatch(stack, [])).body);
      check('/chain/whitelists/', 'post', 401, (await postBatch(stack, [], { token: 'nope' })).body);
      check(
        '/chain/whitelists/',
        'post',
        403,
        (await postBatch(stack, [changeOwnedBy(stack, stack.nodes[0].url, 'add_entry', 'user')], { token: stack.tokens.devAdd })).body,
      );
      // A deadline a loaded machine can still start the workflow in (a start that misses it is a 500).
      await setFault(stack.nodes[1].url, { delayMs: 3000 });
      const late = await postBatch(stack, [changeOwnedBy(stack, stack.nodes[0].url), changeOwnedBy(stack, stack.nodes[1].url)], {
        headers: { timeout: '1000' },
      });
      assert.equal(late.status, 408, late.text);
      check('/chain/whitelists/', 'post', 408, late.body);
      assert.equal(late.body.result.length, 1);

      for (const p of ['/healthz', '/readyz']) {
        const res = await request(stack.api.url, 'GET', p);
        check(p, 'get', res.status, res.body);
      }
    });
  });

  describe('GET /metrics', () => {
    it('when requests are answered, then the counters move by route pattern and status, never by raw path', async () => {
      const before = await scrape(`${stack.api.operatorUrl}/metrics`);
      const wallet = newWallet();
      const missing = `missing-${randomUUID()}`;
      await getExecution(stack, wallet.id, missing);
      await getExecution(stack, wallet.id, missing);
      const res = await request(stack.api.operatorUrl!, 'GET', '/metrics');
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
      const after = parseMetrics(res.text);
      const labels = { route: '/api/v1/executions/:wallet/:executionId', method: 'GET', status: '404' };
      assert.equal(metricSum(after, 'intent_http_requests_total', labels) - metricSum(before, 'intent_http_requests_total', labels), 2);
      assert.equal(
        metricSum(after, 'intent_http_request_duration_seconds_count', labels) -
          metricSum(before, 'intent_http_request_duration_seconds_count', labels),
        2,
      );
      assert.ok(!res.text.includes(missing), 'a raw path leaked into a label');
      assert.ok(!res.text.includes(wallet.id), 'a wallet leaked into a label');
      assert.ok(metricSum(after, 'process_cpu_user_seconds_total') > 0, 'Node.js process metrics are collected');
      assert.ok(after.some((s) => s.name === 'nodejs_heap_size_used_bytes'));
    });

    it('when a submit and whitelist batches are answered, then the submit outcome and batch outcome counters move', async () => {
      const before = await scrape(`${stack.api.operatorUrl}/metrics`);
      const wallet = newWallet();
      const intent = sampleIntent();
      const executionId = `ex-${randomUUID()}`;
      assert.equal((await prepare(stack, wallet, { executionId, intent })).status, 201);
      assert.equal((await submit(stack, wallet.id, signedBody(wallet, executionId, intent))).status, 200);
      assert.equal((await submit(stack, wallet.id, signedBody(wallet, 'no-such', intent))).status, 404);
      assert.equal((await postBatch(stack, [changeOwnedBy(stack, stack.nodes[2].url)])).status, 200);
      assert.equal(
        (await postBatch(stack, [changeOwnedBy(stack, stack.nodes[2].url, 'remove_entry')], { token: stack.tokens.devAdd })).status,
        403,
      );
      assert.equal((await postBatch(stack, [], {})).status, 400);
      const after = await scrape(`${stack.api.operatorUrl}/metrics`);
      const delta = (name: string, labels: Record<string, string>) => metricSum(after, name, labels) - metricSum(before, name, labels);
      assert.equal(delta('intent_execution_submits_total', { status: '200', result: 'PREPARED' }), 1);
      assert.equal(delta('intent_execution_submits_total', { status: '404', result: 'none' }), 1);
      assert.equal(delta('intent_whitelist_batches_total', { outcome: '200' }), 1);
      assert.equal(delta('intent_whitelist_batches_total', { outcome: '403' }), 1);
      assert.equal(delta('intent_whitelist_batches_total', {}), 2, 'a 400 is not a batch');
    });
  });

  describe('logs', () => {
    it('when a request carries X-Request-Id, a token and a signature, then its one log line has the id, route, status, duration and workflow, and no line holds a secret', async () => {
      const wallet = newWallet();
      const intent = sampleIntent();
      const executionId = `ex-${randomUUID()}`;
      const prepareId = `op-${randomUUID()}`;
      const submitId = `op-${randomUUID()}`;
      const token = stack.tokens.all;
      const prepared = await request(stack.api.url, 'POST', `/api/v1/executions/${wallet.id}`, {
        token,
        json: { executionId, intent },
        headers: { 'x-request-id': prepareId },
      });
      assert.equal(prepared.status, 201);
      assert.equal(prepared.headers.get('x-request-id'), prepareId);
      const body = signedBody(wallet, executionId, intent);
      const submitted = await request(stack.api.url, 'POST', `/api/v1/executions/${wallet.id}/submit`, {
        json: body,
        headers: { 'x-request-id': submitId, authorization: `Bearer ${token}` },
      });
      assert.equal(submitted.status, 200);
      const bad = await request(stack.api.url, 'POST', `/api/v1/executions/${wallet.id}/submit`, {
        json: { ...body, timestamp: 1 },
        token,
      });
      assert.equal(bad.status, 400);

      const lines = stack.apiLog.filter((l) => l.reqId === submitId);
      assert.equal(lines.length, 1, JSON.stringify(lines));
      const [line] = lines;
      assert.equal(line.msg, 'request');
      assert.equal(line.route, '/api/v1/executions/:wallet/submit');
      assert.equal(line.method, 'POST');
      assert.equal(line.status, 200);
      assert.equal(typeof line.ms, 'number');
      assert.equal(line.workflowId, `exec:${wallet.id}:${executionId}`);
      assert.equal(line.outcome, 'PREPARED');
      assert.equal(stack.apiLog.filter((l) => l.reqId === prepareId).length, 1);

      const all = stack.apiLog.map((l) => JSON.stringify(l)).join('\n');
      for (const secret of [token, body.signature, Buffer.from(wallet.secretKey).toString('hex')])
        assert.ok(!all.includes(secret), `a log line holds ${secret.slice(0, 12)}…`);
      for (const other of Object.values(stack.tokens)) assert.ok(!all.includes(other), 'a token is in the log');
    });

    it('when X-Request-Id is not sane, then a fresh id is used and echoed', async () => {
      const res = await request(stack.api.url, 'GET', '/healthz', { headers: { 'x-request-id': 'bad id\twith spaces' } });
      const id = res.headers.get('x-request-id') ?? '';
      assert.match(id, /^[0-9a-f-]{36}$/);
      assert.equal(stack.apiLog.filter((l) => l.reqId === id).length, 1);
    });
  });

  describe('/readyz (public: shared probe, no addresses; operator port: detailed)', () => {
    const quiet = pino({ level: 'silent' });

    it('when one storage node is down, then the API stays ready (200) and names the node down in storageNodes (by URL) and in intent_storage_node_up (as node-N, never by URL)', async () => {
      const dead = `http://127.0.0.1:${await freePort()}`;
      const api = await startStackApi(stack, { storageNodes: [stack.nodes[0].url, dead], logger: quiet });
      try {
        const res = await request(api.operatorUrl!, 'GET', '/readyz');
        assert.equal(res.status, 200, res.text);
        assert.equal(res.body.ready, true);
        assert.deepEqual(res.body.down, []);
        assert.deepEqual(res.body.checks, { temporal: 'up', process: 'serving' });
        assert.deepEqual(res.body.storageNodes, { [stack.nodes[0].url]: 'up', [dead]: 'down' });
        const samples = await scrape(`${api.operatorUrl}/metrics`);
        assert.equal(metricSum(samples, 'intent_storage_node_up', { node: 'node-2' }), 0);
        assert.equal(metricSum(samples, 'intent_storage_node_up', { node: 'node-1' }), 1);
        const urls = samples.filter((s) => Object.values(s.labels).some((v) => v.includes('://')));
        assert.deepEqual(urls, [], 'no metric label names a node by URL');
      } finally {
        await api.close(1000);
      }
    });

    it('when a real storage node process of the stack is stopped, then /readyz stays 200 and reports it down until it is back', async function () {
      this.timeout(30_000);
      const index = 2;
      const node = stack.nodes[index].url;
      await stack.nodes[index].stop(2000);
      try {
        const res = await request(stack.api.operatorUrl!, 'GET', '/readyz');
        assert.equal(res.status, 200, res.text);
        assert.equal(res.body.storageNodes[node], 'down');
        const up = (await scrape(`${stack.api.operatorUrl}/metrics`)).filter((s) => s.name === 'intent_storage_node_up');
        assert.deepEqual(
          up.filter((s) => s.labels.node === `node-${index + 1}`).map((s) => s.value),
          [0],
          JSON.stringify(up),
        );
      } finally {
        await restartNode(stack, index);
      }
      const back = await request(stack.api.operatorUrl!, 'GET', '/readyz');
      assert.equal(back.body.storageNodes[node], 'up');
    });

    it('when Temporal is unreachable, then it is 503 naming temporal', async () => {
      const api = await startStackApi(stack, {
        temporalAddress: `127.0.0.1:${await freePort()}`,
        storageNodes: [stack.nodes[0].url],
        logger: quiet,
      });
      try {
        const res = await request(api.operatorUrl!, 'GET', '/readyz');
        assert.equal(res.status, 503, res.text);
        assert.deepEqual(res.body.down, ['temporal']);
        assert.deepEqual(res.body.storageNodes, { [stack.nodes[0].url]: 'up' });
        const pub = await request(api.url, 'GET', '/readyz');
        assert.equal(pub.status, 503, pub.text);
        assert.deepEqual(pub.body, { ready: false, checks: { temporal: 'down', process: 'serving' }, down: ['temporal'] });
      } finally {
        await api.close(1000);
      }
    });
    it('when the API begins its shutdown with a request in flight, then /readyz answers 503 naming the process (shutting-down) until it has stopped', async function () {
      this.timeout(30_000);
      const api = await startStackApi(stack, { logger: quiet });
      // A closing server accepts no new connection, so the probe reaches the same Koa app through a
      // second listener: what a request still arriving on an open connection is answered.
      const handle = api.app.callback();
      const probe = createServer((req, res) => void handle(req, res));
      await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
      const probeUrl = `http://127.0.0.1:${(probe.address() as AddressInfo).port}`;
      const slow = stack.nodes[1].url;
      try {
        const before = await request(probeUrl, 'GET', '/readyz');
        assert.equal(before.status, 200, before.text);
        assert.equal(before.body.checks.process, 'serving');
        // A batch that waits on a slow node keeps the server (and its Temporal connection) open:
        // the node applies durably, then takes 3 s to answer.
        await setFault(slow, { delayMs: 3000 });
        const change = changeOwnedBy(stack, slow);
        const batch = request(api.url, 'POST', '/chain/whitelists/', {
          token: stack.tokens.all,
          json: [change],
          headers: { timeout: '20000' },
        });
        await eventually(async () => (await nodeEntries(slow, change.kind)).includes(change.entry), 10_000, 20);
        const closing = api.close(10_000);
        const during = await request(probeUrl, 'GET', '/readyz');
        assert.equal(during.status, 503, during.text);
        assert.equal(during.body.ready, false);
        assert.deepEqual(during.body.checks, { temporal: 'up', process: 'shutting-down' });
        assert.deepEqual(during.body.down, ['process']);
        assert.equal((await batch).status, 200, 'the request in flight is answered');
        assert.equal(await closing, 0, 'no request cut');
      } finally {
        await setFault(slow, { delayMs: 0 });
        await new Promise<void>((resolve) => probe.close(() => resolve()));
      }
    });
  });

  describe('graceful shutdown of `node dist/api/main.js`', () => {
    it('when SIGTERM arrives during a slow whitelist batch, then new connections are refused, the batch is answered 200, and the process exits 0', async function () {
      this.timeout(30_000);
      const api = await startServiceProcess('api-sigterm', 'api/main.js', 'api listening', stackEnv(stack));
      try {
        const slow = stack.nodes[1].url;
        await setFault(slow, { delayMs: 3000 });
        const change = changeOwnedBy(stack, slow);
        const started = Date.now();
        const inFlight = request(api.url, 'POST', '/chain/whitelists/', {
          token: stack.tokens.all,
          json: [change],
          headers: { 'x-request-id': 'sigterm-batch', timeout: '20000' },
        });
        // SIGTERM once the batch is in flight (the slow node applies durably, then waits 3 s to
        // answer), and the next connection only once the API says it is shutting down: fixed
        // sleeps here raced with a loaded machine.
        await eventually(async () => (await nodeEntries(slow, change.kind)).includes(change.entry), 10_000, 20);
        api.child.kill('SIGTERM');
        await eventually(async () => api.log.some((l) => l.msg === SHUTTING_DOWN), 10_000, 20);
        await assert.rejects(fetch(`${api.url}/healthz`), 'a closing API accepts no new connection');

        const res = await inFlight;
        assert.equal(res.status, 200, res.text);
        assert.ok(Date.now() - started >= 3000, 'the answer waited for the slow node');
        assert.equal(await api.exited, 0);
        await api.logComplete; // the last lines can be read after the exit event
        const at = (msg: string) => api.log.findIndex((l) => l.msg === msg);
        const batchLine = api.log.findIndex((l) => l.reqId === 'sigterm-batch');
        assert.equal(api.log[batchLine]?.status, 200);
        assert.ok(at(SHUTTING_DOWN) >= 0 && at('api stopped') > at(SHUTTING_DOWN), 'shutting down, then stopped');
        assert.ok(batchLine >= 0 && batchLine < at('api stopped'), 'the request was logged before the process stopped');
      } finally {
        await api.stop(2000);
      }
    });
  });
});
