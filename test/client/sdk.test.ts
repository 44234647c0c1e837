import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { IntentClient, IntentServiceError, nacl25519Signer, walletOf, type WatchEvent } from '@intent-service/client';
import nacl from 'tweetnacl';
import { eventually, sampleIntent } from '../support/executions';
import { getStack, type Stack } from '../support/stack';

/** A real HTTP server on loopback whose answers a test scripts, one handler per request in order. */
async function scriptedServer(handlers: Array<(req: IncomingMessage, res: ServerResponse) => void>) {
  const seen: IncomingMessage[] = [];
  const server: Server = createServer((req, res) => {
    seen.push(req);
    const handler = handlers[Math.min(seen.length, handlers.length) - 1];
    handler(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, seen, close: () => new Promise<void>((r) => server.close(() => r())) };
}

const json =
  (status: number, body: unknown, headers: Record<string, string> = {}) =>
  (_req: IncomingMessage, res: ServerResponse) =>
    res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
const record = (status: string) => ({ executionId: 'ex-1', wallet: 'W', status, history: [] });

describe('client: @intent-service/client against the real stack', function () {
  this.timeout(60_000);
  let stack: Stack;
  before(async () => {
    stack = await getStack();
  });

  it('when a backend prepares, a watcher deposits and the wallet submits through the SDK, then watch yields PREPARED, OPERATION_PENDING and SIGNING and ends', async () => {
    const client = new IntentClient({ baseUrl: stack.api.url, token: stack.tokens.all });
    const signer = nacl25519Signer(nacl.sign.keyPair().secretKey);
    const wallet = walletOf(signer);
    const executionId = `sdk-${randomUUID()}`;
    const intent = sampleIntent();
    const prepared = await client.prepare(wallet, { executionId, intent, ttlSeconds: 600 });
    assert.equal(prepared.status, 'PREPARED');

    const events: WatchEvent[] = [];
    const watching = (async () => {
      for await (const event of client.watch(wallet, executionId, { reconnectDelayMs: 100 })) {
        events.push(event);
        if (event.event !== 'status') continue;
        if (event.status === 'PREPARED') await client.deposit(wallet, executionId, { txHash: `0x${randomUUID().replace(/-/g, '')}` });
        if (event.status === 'OPERATION_PENDING')
          assert.equal((await client.submit(signer, { executionId, intent, domain: 'localhost' })).status, 'SIGNING');
      }
    })();
    await watching;
    assert.deepEqual(
      events.map((e) => (e.event === 'status' ? e.status : e.refund.state)),
      ['PREPARED', 'OPERATION_PENDING', 'SIGNING'],
    );
    const final = await client.get(wallet, executionId);
    assert.equal(final.status, 'SIGNING');
    assert.equal(final.signedPayload?.connectEnvelope.domain, 'localhost');
  });

  it('when a wallet has three executions, then list answers a page with a cursor and, iterated, walks every page; cancel signs and cancels; a submit after it is a 409 IntentServiceError', async () => {
    const client = new IntentClient({ baseUrl: stack.api.url, token: stack.tokens.all });
    const signer = nacl25519Signer(nacl.sign.keyPair().secretKey);
    const wallet = walletOf(signer);
    const ids = [];
    for (let i = 0; i < 3; i++)
      ids.push((await client.prepare(wallet, { executionId: `sdk-list-${i}-${randomUUID()}`, intent: { i } })).executionId);
    // The list is the read model's: it catches up with the prepares shortly after.
    await eventually(async () => (await client.list(wallet)).executions.length === 3);
    const first = await client.list(wallet, { pageSize: 2, status: 'PREPARED' });
    assert.equal(first.executions.length, 2);
    assert.ok(first.cursor);
    const pages = [];
    for await (const page of client.list(wallet, { pageSize: 2 })) pages.push(page.executions.map((r) => r.executionId));
    assert.equal(pages.length, 2);
    assert.deepEqual(pages.flat().sort(), [...ids].sort());

    const cancelled = await client.cancel(signer, ids[0], { domain: 'localhost' });
    assert.equal(cancelled.status, 'CANCELLED');
    const refused = await client.submit(signer, { executionId: ids[0], intent: { i: 0 }, domain: 'localhost' }).catch((e: unknown) => e);
    assert.ok(refused instanceof IntentServiceError);
    assert.equal(refused.status, 409);
    assert.match(refused.error, /CANCELLED|cancelled/);
  });
});

describe('client: retries, deadlines and aborts against a real local HTTP server', () => {
  const servers: Array<{ close: () => Promise<void> }> = [];
  after(() => Promise.all(servers.map((s) => s.close())));
  const serve = async (handlers: Array<(req: IncomingMessage, res: ServerResponse) => void>) => {
    const s = await scriptedServer(handlers);
    servers.push(s);
    return s;
  };
  const signer = nacl25519Signer(new Uint8Array(32).fill(1));

  it('when get is answered 503 with Retry-After twice, then it is sent again after each wait and answers the record', async () => {
    const s = await serve([
      json(503, { error: 'busy' }, { 'retry-after': '1' }),
      json(503, { error: 'busy' }, { 'retry-after': '1' }),
      json(200, { result: record('PREPARED') }),
    ]);
    const started = Date.now();
    const got = await new IntentClient({ baseUrl: s.url, deadlineMs: 10_000 }).get('W', 'ex-1');
    assert.equal(got.status, 'PREPARED');
    assert.equal(s.seen.length, 3);
    assert.ok(Date.now() - started >= 2000, 'it waited Retry-After before each retry');
  });

  it('when submit is answered 409, then it throws IntentServiceError 409 with the error text after one request', async () => {
    const s = await serve([json(409, { error: 'execution is CANCELLED' }), json(200, { result: { status: 'SIGNING' } })]);
    const err = await new IntentClient({ baseUrl: s.url })
      .submit(signer, { executionId: 'ex-1', intent: {}, domain: 'localhost' })
      .catch((e: unknown) => e);
    assert.ok(err instanceof IntentServiceError);
    assert.deepEqual([err.status, err.error, err.retryAfter], [409, 'execution is CANCELLED', undefined]);
    assert.equal(s.seen.length, 1);
  });

  it('when submit is answered 503 then 200, then the same signed body is sent twice; prepare answered 503 is not retried', async () => {
    const bodies: string[] = [];
    const collect =
      (status: number, body: unknown, headers: Record<string, string> = {}) =>
      (req: IncomingMessage, res: ServerResponse) => {
        let text = '';
        req.on('data', (c: Buffer) => (text += c));
        req.on('end', () => {
          bodies.push(text);
          json(status, body, headers)(req, res);
        });
      };
    const s = await serve([
      collect(503, { error: 'unknown outcome' }, { 'retry-after': '0' }),
      collect(200, { result: { status: 'SIGNING' } }),
    ]);
    const client = new IntentClient({ baseUrl: s.url, token: 't' });
    assert.deepEqual(await client.submit(signer, { executionId: 'ex-1', intent: { a: 1 }, domain: 'localhost' }), { status: 'SIGNING' });
    assert.equal(bodies.length, 2);
    assert.equal(bodies[0], bodies[1], 'a retry sends the same signature and timestamp');

    const p = await serve([json(503, { error: 'busy' }, { 'retry-after': '0' }), json(201, { result: record('PREPARED') })]);
    const err = await new IntentClient({ baseUrl: p.url, token: 't' }).prepare('W', { intent: {} }).catch((e: unknown) => e);
    assert.ok(err instanceof IntentServiceError);
    assert.deepEqual([err.status, err.retryAfter, p.seen.length], [503, 0, 1]);
  });

  it('when Retry-After reaches past the deadline, then the 503 is thrown at once with its retryAfter', async () => {
    const s = await serve([json(503, { error: 'busy' }, { 'retry-after': '30' })]);
    const started = Date.now();
    const err = await new IntentClient({ baseUrl: s.url, deadlineMs: 2000 }).get('W', 'ex-1').catch((e: unknown) => e);
    assert.ok(err instanceof IntentServiceError);
    assert.deepEqual([err.status, err.retryAfter, s.seen.length], [503, 30, 1]);
    assert.ok(Date.now() - started < 1000);
  });

  it('when the connection is cut before an answer, then list sends again and answers the page; with no server at all it throws status 0 by the deadline', async () => {
    const s = await serve([(req) => req.socket.destroy(), json(200, { result: [record('PREPARED')], nextPageToken: 'next' })]);
    const page = await new IntentClient({ baseUrl: s.url }).list('W', { status: ['PREPARED', 'SIGNING'] });
    assert.equal(s.seen.length, 2);
    assert.equal(s.seen[1].url, '/api/v1/executions/W?status=PREPARED%2CSIGNING');
    assert.deepEqual([page.executions.length, page.cursor], [1, 'next']);

    const gone = await serve([json(200, {})]);
    await gone.close();
    const started = Date.now();
    const err = await new IntentClient({ baseUrl: gone.url, deadlineMs: 1500 }).get('W', 'ex-1').catch((e: unknown) => e);
    assert.ok(err instanceof IntentServiceError);
    assert.equal(err.status, 0);
    assert.ok(Date.now() - started < 3000, 'it gave up at the deadline');
  });

  it('when the signal aborts during a Retry-After wait, then the call rejects with the abort reason at once', async () => {
    const s = await serve([json(503, { error: 'busy' }, { 'retry-after': '20' })]);
    const controller = new AbortController();
    const started = Date.now();
    setTimeout(() => controller.abort(new Error('user left')), 300);
    const err = await new IntentClient({ baseUrl: s.url, deadlineMs: 60_000 })
      .get('W', 'ex-1', { signal: controller.signal })
      .catch((e: unknown) => e);
    assert.equal((err as Error).message, 'user left');
    assert.ok(Date.now() - started < 2000);
  });

  it('when an event stream ends before a final status, then watch reconnects with Last-Event-ID and ends after SIGNING', async () => {
    const sse = (events: string) => (_req: IncomingMessage, res: ServerResponse) =>
      res.writeHead(200, { 'content-type': 'text/event-stream' }).end(events);
    const event = (id: number, status: string) => `id: ${id}\nevent: status\ndata: ${JSON.stringify(record(status))}\n\n`;
    const s = await serve([
      sse(`: hello\n\n${event(1, 'PREPARED')}`),
      sse(`event: status\ndata: ${JSON.stringify(record('OPERATION_PENDING'))}\r\n\r\n${event(3, 'SIGNING')}${event(4, 'SIGNING')}`),
    ]);
    const statuses: string[] = [];
    for await (const e of new IntentClient({ baseUrl: s.url }).watch('W', 'ex-1', { reconnectDelayMs: 10 }))
      statuses.push(`${e.event === 'status' ? e.status : e.refund.state}@${e.id ?? '-'}`);
    assert.deepEqual(statuses, ['PREPARED@1', 'OPERATION_PENDING@-', 'SIGNING@3']);
    assert.equal(s.seen.length, 2);
    assert.equal(s.seen[0].headers['last-event-id'], undefined);
    assert.equal(s.seen[1].headers['last-event-id'], '1');
  });

  it('when the record is final while a refund is open, then watch goes on through the refund events, reconnecting with Last-Event-ID, and ends once the refund is refunded', async () => {
    const sse = (events: string) => (_req: IncomingMessage, res: ServerResponse) =>
      res.writeHead(200, { 'content-type': 'text/event-stream' }).end(events);
    const refund = (state: string, more: Record<string, string> = {}) =>
      JSON.stringify({ id: 'r1', txHash: `0x${'1'.repeat(64)}`, transferIndex: 0, reason: 'expired', state, ...more });
    const refundTxHash = `0x${'2'.repeat(64)}`;
    const s = await serve([
      sse(`event: refund\ndata: ${refund('due')}\n\nid: 5.a\nevent: status\ndata: ${JSON.stringify(record('EXPIRED'))}\n\n`),
      sse(`event: refund\ndata: ${refund('paying')}\n\nid: 5.b\nevent: refund\ndata: ${refund('held', { holdReason: 'fee-cap' })}\n\n`),
      sse(`id: 5.c\nevent: refund\ndata: ${refund('refunded', { refundTxHash })}\n\n`),
      (_req, res) => res.writeHead(204).end(),
    ]);
    const seen: string[] = [];
    let paid: WatchEvent | undefined;
    for await (const e of new IntentClient({ baseUrl: s.url }).watch('W', 'ex-1', { reconnectDelayMs: 10 })) {
      seen.push(`${e.event}:${e.event === 'status' ? e.status : e.refund.state}@${e.id ?? '-'}`);
      if (e.event === 'refund' && e.refund.state === 'refunded') paid = e;
    }
    assert.deepEqual(seen, ['refund:due@-', 'status:EXPIRED@5.a', 'refund:paying@-', 'refund:held@5.b', 'refund:refunded@5.c']);
    assert.equal(paid?.event === 'refund' && paid.refund.refundTxHash, refundTxHash);
    assert.deepEqual(
      s.seen.map((r) => r.headers['last-event-id']),
      [undefined, '5.a', '5.b'],
      'nothing open after the refund: no fourth request',
    );
  });

  it('when a reconnect is answered 204, then watch ends', async () => {
    const s = await serve([
      (_req, res) =>
        res
          .writeHead(200, { 'content-type': 'text/event-stream' })
          .end(`id: 7.d\nevent: refund\ndata: ${JSON.stringify({ id: 'r', state: 'held' })}\n\n`),
      (_req, res) => res.writeHead(204).end(),
    ]);
    const ids: Array<string | undefined> = [];
    for await (const e of new IntentClient({ baseUrl: s.url }).watch('W', 'ex-1', { reconnectDelayMs: 10 })) ids.push(e.id);
    assert.deepEqual(ids, ['7.d']);
    assert.equal(s.seen[1].headers['last-event-id'], '7.d');
  });
});
