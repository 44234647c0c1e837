import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { getJson, MAX_ANSWER_BYTES, postJson } from '../../activities/http-post';
import { RequestVerifier } from '../../lib/node-request-auth';
import { testNodeKeys, testNodeTransport } from '../support/node-keys';

// The storage nodes' apply POST (activities/http-post.ts) against a real loopback server whose
// behaviour each test sets: every way an answer can fail must reject with what postApply maps to
// a NodeFailure (a timeout, an abort, a socket error code, an answer too large).
describe('activity http: postJson (real loopback server)', function () {
  let server: Server;
  let url: string;
  let handle: (req: IncomingMessage, res: ServerResponse) => void;
  let connections = 0;
  const sockets = new Set<Socket>();

  before(async () => {
    server = createServer((req, res) => handle(req, res));
    server.on('connection', (socket) => {
      connections++;
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/whitelists/apply`;
  });
  after(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => server.close(resolve));
  });

  const transport = testNodeTransport();

  /** Reads the request body, then answers with `status` and `text`. */
  const answering = (status: number, text: string) => (req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(text);
    });
  };

  it('when the node answers, then it resolves with the status and the whole body, over one kept-alive connection', async () => {
    const sent: string[] = [];
    handle = (req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        sent.push(`${req.method} ${req.headers['content-type']} ${body}`);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ echo: JSON.parse(body) }));
      });
    };
    const before = connections;
    const first = await postJson(url, JSON.stringify({ n: 1, text: 'é' }), { timeoutMs: 5_000, transport });
    const second = await postJson(url, JSON.stringify({ n: 2 }), { timeoutMs: 5_000, transport });
    assert.deepEqual(first, { status: 200, text: JSON.stringify({ echo: { n: 1, text: 'é' } }) });
    assert.deepEqual(second, { status: 200, text: JSON.stringify({ echo: { n: 2 } }) });
    assert.deepEqual(sent, ['POST application/json {"n":1,"text":"é"}', 'POST application/json {"n":2}']);
    assert.equal(connections - before, 1, 'the second request reused the first one’s connection');
  });

  it('when a POST and a GET with a query are sent, then each is signed over what the node receives and verifies', async () => {
    const verifier = new RequestVerifier(testNodeKeys(), { nodes: () => [new URL(url).host] });
    handle = (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const outcome = verifier.verify({
          method: req.method ?? '',
          target: req.url ?? '',
          headers: req.headers,
          body: Buffer.concat(chunks),
        });
        res.writeHead(outcome.ok ? 200 : 401).end(outcome.ok ? 'ok' : outcome.reason);
      });
    };
    assert.deepEqual(await postJson(url, JSON.stringify({ text: 'é' }), { timeoutMs: 5_000, transport }), { status: 200, text: 'ok' });
    const get = `${url.replace('/apply', '/user')}?after=${encodeURIComponent('0xAb c/é')}&limit=2`;
    assert.deepEqual(await getJson(get, { timeoutMs: 5_000, transport }), { status: 200, text: 'ok' });
  });

  it('when the node answers an error status, then it resolves with it (postApply decides what it means)', async () => {
    handle = answering(503, 'busy');
    assert.deepEqual(await postJson(url, '{}', { timeoutMs: 5_000, transport }), { status: 503, text: 'busy' });
  });

  it('when the node never answers, then it rejects with a TimeoutError at the timeout', async () => {
    handle = () => undefined; // holds the request open
    const started = performance.now();
    await assert.rejects(postJson(url, '{}', { timeoutMs: 200, transport }), (e: Error) => e.name === 'TimeoutError');
    assert.ok(performance.now() - started >= 190, 'not before the timeout');
  });

  it('when the answer trickles in past the timeout, then the timeout covers the whole exchange, not each chunk', async () => {
    handle = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const timer = setInterval(() => res.write(' '), 50);
      res.on('close', () => clearInterval(timer));
    };
    await assert.rejects(postJson(url, '{}', { timeoutMs: 300, transport }), (e: Error) => e.name === 'TimeoutError');
  });

  it('when the signal aborts mid-request, then it rejects with an AbortError; an aborted signal sends nothing', async () => {
    let requests = 0;
    handle = () => void requests++;
    const controller = new AbortController();
    const pending = postJson(url, '{}', { timeoutMs: 5_000, signal: controller.signal, transport });
    setTimeout(() => controller.abort(), 50);
    await assert.rejects(pending, (e: Error) => e.name === 'AbortError');
    assert.equal(requests, 1);
    await assert.rejects(
      postJson(url, '{}', { timeoutMs: 5_000, signal: controller.signal, transport }),
      (e: Error) => e.name === 'AbortError',
    );
    assert.equal(requests, 1, 'the second call never reached the node');
  });

  it('when nothing listens on the port, then it rejects with ECONNREFUSED', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    await assert.rejects(
      postJson(`http://127.0.0.1:${port}/`, '{}', { timeoutMs: 5_000, transport }),
      (e: Error & { code?: string }) => e.code === 'ECONNREFUSED',
    );
  });

  it('when the node cuts its answer short, then it rejects with ECONNRESET (the node may have applied)', async () => {
    handle = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
      res.write('{"batchId":');
      setTimeout(() => res.socket?.destroy(), 20);
    };
    await assert.rejects(postJson(url, '{}', { timeoutMs: 5_000, transport }), (e: Error & { code?: string }) => e.code === 'ECONNRESET');
  });

  it('when the answer is larger than MAX_ANSWER_BYTES, then it stops reading and rejects with AnswerTooLarge', async () => {
    handle = answering(200, 'x'.repeat(MAX_ANSWER_BYTES + 1));
    await assert.rejects(postJson(url, '{}', { timeoutMs: 10_000, transport }), (e: Error) => e.name === 'AnswerTooLarge');
  });

  it('when the URL is not http(s), then it rejects without a request', async () => {
    await assert.rejects(postJson('ftp://127.0.0.1/', '{}', { timeoutMs: 1_000, transport }), /not an http\(s\) URL/);
  });
});
