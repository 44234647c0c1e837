import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { EventSource } from 'eventsource';
import pino from 'pino';
import type { RunningApi } from '../../api/server';
import { cancelBody, cancelHttp, depositHttp, newWallet, prepare } from '../support/executions';
import { request } from '../support/http';
import { readEventStream, type SseEvent } from '../support/sse';
import { Ajv2020 } from 'ajv/dist/2020';
import { buildOpenApiDocument } from '../../api/operations/openapi';
import { getStack, startStackApi, type Stack } from '../support/stack';

/** What an API's event hub watches (its other counters are checked apart). */
const watched = (api: RunningApi) => {
  const { executions, subscribers } = api.app.events.stats();
  return { executions, subscribers };
};

describe('integration: GET /api/v1/executions/{wallet}/{executionId}/events (Server-Sent Events)', function () {
  this.timeout(90_000);
  let stack: Stack;
  let secondApi: RunningApi;
  before(async () => {
    stack = await getStack();
    // A second API process on the same Temporal and read model: subscribers on either see every change.
    secondApi = await startStackApi(stack, { logger: pino({ level: 'silent' }) });
  });
  after(async () => {
    await secondApi?.close(1000);
  });

  async function prepared() {
    const wallet = newWallet();
    const executionId = `sse-${randomUUID()}`;
    assert.equal((await prepare(stack, wallet, { executionId })).status, 201);
    return { wallet, executionId, path: `/api/v1/executions/${wallet.id}/${executionId}/events` };
  }

  it('when 100 clients subscribe to one execution across two API processes, then each gets the current record first, then every change once: CANCELLED after the deposit, its refund due, then waived, and the stream closes once nothing is owed; each process reads the execution once per round', async () => {
    const { wallet, executionId, path } = await prepared();
    // Per stream: resolved when it has received its first event, OPERATION_PENDING, and CANCELLED with the deposit's refund row.
    const firstSeen: Promise<void>[] = [];
    const pendingSeen: Promise<void>[] = [];
    const owedSeen: Promise<string>[] = [];
    const streams = Array.from({ length: 100 }, (_, i) => {
      let resolveFirst!: () => void;
      let resolvePending!: () => void;
      let resolveOwed!: (rowId: string) => void;
      firstSeen.push(new Promise((r) => (resolveFirst = r)));
      pendingSeen.push(new Promise((r) => (resolvePending = r)));
      owedSeen.push(new Promise((r) => (resolveOwed = r)));
      let cancelled = false;
      let rowId: string | undefined;
      const base = i % 2 === 0 ? stack.api.url : secondApi.url;
      return readEventStream(base + path, {
        onEvent: (e) => {
          resolveFirst();
          const data = JSON.parse(e.data);
          if (e.event === 'status' && data.status === 'OPERATION_PENDING') resolvePending();
          if (e.event === 'status' && data.status === 'CANCELLED') cancelled = true;
          if (e.event === 'refund' && data.state === 'due') rowId = data.id;
          if (cancelled && rowId !== undefined) resolveOwed(rowId);
        },
      });
    });
    await Promise.all(firstSeen);
    // Every subscriber of one process shares one poll of the execution.
    assert.deepEqual(watched(stack.api), { executions: 1, subscribers: 50 });
    assert.deepEqual(watched(secondApi), { executions: 1, subscribers: 50 });

    assert.equal((await depositHttp(stack, wallet.id, executionId, { txHash: '0xsse' })).status, 200);
    // The next change only once every subscriber has had the OPERATION_PENDING round: a poll that
    // sees two changes sends the newer record only (its history holds both). A fixed wait of three
    // poll intervals here raced with a loaded machine (CI: one stream saw PREPARED, CANCELLED).
    await Promise.all(pendingSeen);
    assert.equal((await cancelHttp(stack.api.url, wallet.id, executionId, cancelBody(wallet, executionId))).status, 200);
    // CANCELLED is final, but its deposit is owed back: the streams stay open until the row is settled.
    const [rowId] = new Set(await Promise.all(owedSeen));
    assert.deepEqual(watched(stack.api), { executions: 1, subscribers: 50 }, 'open while the refund is due');
    const waived = await request(stack.api.url, 'POST', `/api/v1/refunds/${rowId}/waived`, {
      json: { reason: 'the depositor was paid by hand' },
      token: stack.tokens.all,
    });
    assert.equal(waived.status, 200, waived.text);

    const results = await Promise.all(streams); // each resolves when the server ends its stream
    for (const { status, headers, events } of results) {
      assert.equal(status, 200);
      assert.match(headers.get('content-type') ?? '', /^text\/event-stream/);
      const statuses = events.filter((e: SseEvent) => e.event === 'status').map((e: SseEvent) => JSON.parse(e.data).status);
      assert.deepEqual(statuses, ['PREPARED', 'OPERATION_PENDING', 'CANCELLED']);
      const refunds = events.filter((e: SseEvent) => e.event === 'refund').map((e: SseEvent) => JSON.parse(e.data));
      assert.deepEqual(
        refunds.map((r) => [r.id, r.reason, r.state]),
        [
          [rowId, 'cancelled-after-deposit', 'due'],
          [rowId, 'cancelled-after-deposit', 'waived'],
        ],
      );
      const versions = events.filter((e: SseEvent) => e.id !== undefined).map((e: SseEvent) => Number(e.id!.split('.')[0]));
      assert.deepEqual(
        versions,
        [...versions].sort((a, b) => a - b),
        'ids (record versions, then the rows) grow',
      );
      assert.match(events.at(-1)!.id ?? '', /^\d+\.[0-9a-f]{16}$/, 'the last event names the rows');
      const cancelled = events.find((e: SseEvent) => e.event === 'status' && JSON.parse(e.data).status === 'CANCELLED')!;
      assert.deepEqual(JSON.parse(cancelled.data).deposit, { txHash: '0xsse', refundDue: true });
    }
    assert.deepEqual(watched(stack.api), { executions: 0, subscribers: 0 }, 'nothing left watched');
    assert.deepEqual(watched(secondApi), { executions: 0, subscribers: 0 });
  });

  it('when an EventSource client (the eventsource package) follows an execution, then it gets status events and, reconnecting after the final one, is told 204 and stops', async () => {
    const { wallet, executionId, path } = await prepared();
    const es = new EventSource(stack.api.url + path);
    const statuses: string[] = [];
    const done = new Promise<void>((resolve, reject) => {
      es.addEventListener('status', (e) => {
        statuses.push(JSON.parse(e.data).status);
        if (statuses.length === 1) void cancelHttp(stack.api.url, wallet.id, executionId, cancelBody(wallet, executionId)).catch(reject);
      });
      // After CANCELLED the server ends the stream; the client reconnects with Last-Event-ID and the 204 closes it for good.
      es.addEventListener('error', () => {
        if (es.readyState === EventSource.CLOSED) resolve();
      });
    });
    await done;
    es.close();
    assert.deepEqual(statuses, ['PREPARED', 'CANCELLED']);
  });

  it("when a stream's events are parsed, then each has the shape the OpenAPI document declares for the stream, and its data the record's or the row's", async () => {
    const { wallet, executionId, path } = await prepared();
    assert.equal((await depositHttp(stack, wallet.id, executionId, { txHash: `0x${randomUUID().replace(/-/g, '')}` })).status, 200);
    assert.equal((await cancelHttp(stack.api.url, wallet.id, executionId, cancelBody(wallet, executionId))).status, 200);
    const doc = buildOpenApiDocument(stack.config) as any;
    const ajv = new Ajv2020({ strict: false });
    ajv.addFormat('date-time', (t: string) => !Number.isNaN(Date.parse(t)));
    const op = doc.paths['/api/v1/executions/{wallet}/{executionId}/events'].get;
    const event = ajv.compile(op.responses['200'].content['text/event-stream'].schema);
    const record = ajv.compile({ ...doc.components.schemas.ExecutionRecord, components: doc.components });
    const row = ajv.compile({ ...doc.components.schemas.ExecutionRefund, components: doc.components });
    const stop = new AbortController();
    const read = readEventStream(`${stack.api.url}${path}`, {
      signal: stop.signal,
      onEvent: (e) => {
        if (e.event === 'refund') stop.abort();
      },
    }).catch(() => undefined);
    const timer = setTimeout(() => stop.abort(), 20_000);
    const got = await read;
    clearTimeout(timer);
    const events = got?.events ?? [];
    assert.ok(
      events.some((e) => e.event === 'status'),
      JSON.stringify(events),
    );
    for (const e of events) {
      assert.ok(event(e), `${JSON.stringify(e)}: ${ajv.errorsText(event.errors)}`);
      const check = e.event === 'status' ? record : row;
      assert.ok(check(JSON.parse(e.data)), `${e.event}: ${ajv.errorsText(check.errors)}`);
    }
  });

  it('when the execution does not exist, then 404 { error } before any stream; a bad path is 400', async () => {
    const wallet = newWallet();
    const missing = await readEventStream(`${stack.api.url}/api/v1/executions/${wallet.id}/nope/events`);
    assert.equal(missing.status, 404);
    assert.equal(typeof JSON.parse(missing.text).error, 'string');
    const bad = await readEventStream(`${stack.api.url}/api/v1/executions/${wallet.id}/${'x'.repeat(200)}/events`);
    assert.equal(bad.status, 400);
  });

  it('when a client disconnects, then its subscription ends and the execution is no longer watched', async () => {
    const { path } = await prepared();
    const controller = new AbortController();
    let first!: () => void;
    const seen = new Promise<void>((r) => (first = r));
    const reading = readEventStream(stack.api.url + path, { signal: controller.signal, onEvent: () => first() });
    await seen;
    assert.equal(watched(stack.api).subscribers, 1);
    controller.abort();
    await reading;
    const deadline = Date.now() + 5000;
    while (watched(stack.api).subscribers !== 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(watched(stack.api), { executions: 0, subscribers: 0 });
  });
});
