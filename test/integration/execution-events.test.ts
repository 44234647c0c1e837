import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { EventSource } from 'eventsource';
import pino from 'pino';
import type { RunningApi } from '../../api/server';
import { cancelBody, cancelHttp, depositHttp, newWallet, prepare } from '../support/executions';
import { readEventStream, type SseEvent } from '../support/sse';
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

  it('when 100 clients subscribe to one execution across two API processes, then each gets the current record first, then every change once, and the stream closes after CANCELLED; each process reads the execution once per round', async () => {
    const { wallet, executionId, path } = await prepared();
    // Per stream: resolved when it has received its first event, and when it has received OPERATION_PENDING.
    const firstSeen: Promise<void>[] = [];
    const pendingSeen: Promise<void>[] = [];
    const streams = Array.from({ length: 100 }, (_, i) => {
      let resolveFirst!: () => void;
      let resolvePending!: () => void;
      firstSeen.push(new Promise((r) => (resolveFirst = r)));
      pendingSeen.push(new Promise((r) => (resolvePending = r)));
      const base = i % 2 === 0 ? stack.api.url : secondApi.url;
      return readEventStream(base + path, {
        onEvent: (e) => {
          resolveFirst();
          if (JSON.parse(e.data).status === 'OPERATION_PENDING') resolvePending();
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

    const results = await Promise.all(streams); // each resolves when the server ends its stream
    for (const { status, headers, events } of results) {
      assert.equal(status, 200);
      assert.match(headers.get('content-type') ?? '', /^text\/event-stream/);
      assert.ok(events.every((e: SseEvent) => e.event === 'status'));
      const statuses = events.map((e: SseEvent) => JSON.parse(e.data).status);
      assert.deepEqual(statuses, ['PREPARED', 'OPERATION_PENDING', 'CANCELLED']);
      const ids = events.map((e: SseEvent) => Number(e.id));
      assert.deepEqual(
        ids,
        [...ids].sort((a, b) => a - b),
        'ids (record versions) grow',
      );
      assert.deepEqual(JSON.parse(events[2].data).deposit, { txHash: '0xsse', refundDue: true });
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
