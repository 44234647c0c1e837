import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import { ROUTES } from '../../contracts/storage-node-protocol';
import { createStorageNodeServer, type StorageNodeServer } from '../../storage-node/server';
import { signedHeaders, testNodeKeys } from '../support/node-keys';
import { tempDataDir } from './node-process';

/**
 * A peer on a raw socket: writes what it is told, when it is told, and records what the node
 * sends back and whether the node closed the connection.
 */
interface Peer {
  socket: net.Socket;
  received: () => string;
  /** Resolves once the node closed (or reset) the connection. */
  closed: Promise<void>;
  /** Resolves with what was received once it holds a complete status line. */
  statusLine: Promise<string>;
}

function connectPeer(url: string): Promise<Peer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: hostname, port: Number(port) });
    let text = '';
    let onStatus: (line: string) => void = () => undefined;
    const statusLine = new Promise<string>((r) => (onStatus = r));
    socket.setEncoding('utf8').on('data', (chunk: string) => {
      text += chunk;
      if (text.includes('\r\n')) onStatus(text.split('\r\n')[0]);
    });
    // A reset is a close too: what the test asks is whether the node let go of the connection.
    socket.on('error', () => undefined);
    const closed = new Promise<void>((r) => socket.once('close', () => r()));
    socket.once('connect', () => resolve({ socket, received: () => text, closed, statusLine }));
    socket.once('error', reject);
  });
}

/** Writes `piece` every `everyMs` until the connection closes; the node must cut it, the peer never stops. */
function dribble(peer: Peer, piece: string, everyMs: number): void {
  const timer = setInterval(() => {
    if (peer.socket.writable) peer.socket.write(piece);
  }, everyMs);
  void peer.closed.then(() => clearInterval(timer));
}

/** Request headers as the node's clients send them: signed for `url`, over `body` (which the peer may never send). */
function head(method: string, url: string, headers: Record<string, string | number>): string {
  const { pathname, search, host } = new URL(url);
  const lines = [`${method} ${pathname}${search} HTTP/1.1`, `host: ${host}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
  return `${lines.join('\r\n')}\r\n\r\n`;
}

describe('storage node limits: slow and oversized peers are cut before they cost memory (in-process, raw sockets)', function () {
  this.timeout(20_000);
  let dir: string;
  let node: StorageNodeServer;
  let url: string;

  /** A node with short limits, so that the tests wait seconds, not the defaults' tens of seconds. */
  async function start(limits: { headersTimeoutMs?: number; requestTimeoutMs?: number; maxConnections?: number }) {
    node = createStorageNodeServer({ dataDir: dir, keys: testNodeKeys(), onError: (err) => assert.fail(err), ...limits });
    ({ url } = await node.listen(0));
  }

  beforeEach(() => {
    dir = tempDataDir();
  });
  afterEach(async () => {
    await node?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('when a peer sends its headers a line at a time and never ends them, then the node closes the connection after the headers timeout', async () => {
    await start({ headersTimeoutMs: 1_000, requestTimeoutMs: 2_000 });
    const peer = await connectPeer(url);
    peer.socket.write(`GET ${ROUTES.health} HTTP/1.1\r\nhost: x\r\n`);
    dribble(peer, 'x-slow: 1\r\n', 100);
    await peer.closed;
    assert.match(peer.received(), /^$|^HTTP\/1\.1 408/, 'nothing, or a 408');
  });

  it('when a peer sends signed headers and then its body a byte at a time, then the node closes the connection after the request timeout', async () => {
    await start({ headersTimeoutMs: 1_000, requestTimeoutMs: 2_000 });
    const target = `${url}${ROUTES.apply}`;
    const body = '{"batchId":"slow","position":1,"changes":[]}'.padEnd(1_000, ' ');
    const peer = await connectPeer(url);
    peer.socket.write(head('POST', target, { ...signedHeaders('POST', target, body), 'content-length': body.length }));
    dribble(peer, ' ', 100);
    await peer.closed;
    assert.match(peer.received(), /^$|^HTTP\/1\.1 408/, 'nothing, or a 408');
  });

  it('when a signed peer hangs up halfway through its body, then the node lets go of the request without reporting an error of its own', async () => {
    const errors: Error[] = [];
    node = createStorageNodeServer({ dataDir: dir, keys: testNodeKeys(), onError: (err) => errors.push(err) });
    ({ url } = await node.listen(0));
    const target = `${url}${ROUTES.apply}`;
    const body = '{"batchId":"gone","position":1,"changes":[]}'.padEnd(1_000, ' ');
    const peer = await connectPeer(url);
    peer.socket.write(head('POST', target, { ...signedHeaders('POST', target, body), 'content-length': body.length }) + body.slice(0, 500));
    await new Promise((r) => setTimeout(r, 100));
    peer.socket.destroy();
    await peer.closed;
    // The node still serves, and said nothing about the peer that left.
    const next = await connectPeer(url);
    const health = `${url}${ROUTES.health}`;
    next.socket.write(head('GET', health, signedHeaders('GET', health)));
    assert.equal(await next.statusLine, 'HTTP/1.1 200 OK');
    next.socket.destroy();
    assert.deepEqual(errors, []);
  });

  it('when more peers connect than the cap, then the extra connection is closed unanswered and the others are still served', async () => {
    await start({ maxConnections: 2 });
    const first = await connectPeer(url);
    const second = await connectPeer(url);
    const extra = await connectPeer(url);
    await extra.closed;
    assert.equal(extra.received(), '');
    const health = `${url}${ROUTES.health}`;
    first.socket.write(head('GET', health, signedHeaders('GET', health)));
    assert.equal(await first.statusLine, 'HTTP/1.1 200 OK');
    first.socket.destroy();
    second.socket.destroy();
  });

  it('when an unsigned request declares a 1 MiB body, then the node answers 401 before the peer sends any of it', async () => {
    await start({});
    const peer = await connectPeer(url);
    peer.socket.write(head('POST', `${url}${ROUTES.apply}`, { 'content-type': 'application/json', 'content-length': 1024 * 1024 }));
    assert.equal(await peer.statusLine, 'HTTP/1.1 401 Unauthorized');
    peer.socket.destroy();
  });

  it('when a request signed for another node declares a body, then the node answers 401 before the peer sends any of it', async () => {
    await start({});
    const body = '{"batchId":"b","position":1,"changes":[]}';
    const elsewhere = `http://127.0.0.1:1${ROUTES.apply}`;
    const peer = await connectPeer(url);
    peer.socket.write(head('POST', `${url}${ROUTES.apply}`, { ...signedHeaders('POST', elsewhere, body), 'content-length': body.length }));
    assert.equal(await peer.statusLine, 'HTTP/1.1 401 Unauthorized');
    peer.socket.destroy();
  });

  it('when a signed request declares a body over the limit, then the node answers 413 before the peer sends any of it', async () => {
    await start({});
    const target = `${url}${ROUTES.apply}`;
    const peer = await connectPeer(url);
    peer.socket.write(head('POST', target, { ...signedHeaders('POST', target, 'x'), 'content-length': 2 * 1024 * 1024 }));
    assert.equal(await peer.statusLine, 'HTTP/1.1 413 Payload Too Large');
    peer.socket.destroy();
  });
});
