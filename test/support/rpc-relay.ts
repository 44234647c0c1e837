import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One JSON-RPC call as a relay sees it. */
export interface RpcCall {
  id: number;
  method: string;
  params: unknown[];
}

/** What a relay answers for a call instead of the node: a JSON-RPC error, or a result of its own (a lagging backend's `null`). */
export type RpcAnswer = { code: number; message: string } | { result: unknown };

/**
 * A JSON-RPC relay on loopback in front of a real node (`upstream`), the way a provider with fewer
 * methods, tighter limits or a lagging backend answers: a request (or batch) holding a call that
 * `refusal` answers is answered with that error or result for it (and an error for the others of
 * its batch); every other request goes to the node as it came, after `delayMs` of its slowest call
 * (a busy node's late answer).
 */
export async function startRpcRelay(
  upstream: string,
  refusal: (call: RpcCall) => RpcAnswer | undefined,
  delayMs: (call: RpcCall) => number = () => 0,
): Promise<{ url: string; close: () => void }> {
  const relay = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const parsed = JSON.parse(body) as RpcCall | RpcCall[];
      const calls = Array.isArray(parsed) ? parsed : [parsed];
      res.setHeader('content-type', 'application/json');
      if (calls.some((c) => refusal(c) !== undefined)) {
        const answer = (c: RpcCall) => {
          const own = refusal(c) ?? { code: -32603, message: 'not sent' };
          return 'result' in own ? { jsonrpc: '2.0', id: c.id, result: own.result } : { jsonrpc: '2.0', id: c.id, error: own };
        };
        res.end(JSON.stringify(Array.isArray(parsed) ? calls.map(answer) : answer(calls[0])));
        return;
      }
      const delay = Math.max(0, ...calls.map(delayMs));
      void new Promise((r) => setTimeout(r, delay))
        .then(() => fetch(upstream, { method: 'POST', headers: { 'content-type': 'application/json' }, body }))
        .then(async (answer) => res.end(await answer.text()));
    });
  });
  await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(relay.address() as AddressInfo).port}`, close: () => relay.close() };
}

/**
 * A chain node's URL the way a hosted node gives it, with its API key in the path
 * (`http://127.0.0.1:PORT/v3/KEY`): relays to `upstream`, except that a request holding a call
 * `failing` picks (set by `fail`; none at first) is answered HTTP 500. Any other path is answered
 * 404, so only the keyed URL reaches the node.
 */
export async function startKeyedNode(
  upstream: string,
  key: string,
): Promise<{ url: string; fail: (failing: (method: string) => boolean) => void; close: () => void }> {
  let failing: (method: string) => boolean = () => false;
  const node = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url !== `/v3/${key}`) return void res.writeHead(404).end();
      const body = Buffer.concat(chunks);
      const parsed = JSON.parse(body.toString('utf8')) as RpcCall | RpcCall[];
      if ((Array.isArray(parsed) ? parsed : [parsed]).some((c) => failing(c.method)))
        return void res.writeHead(500, { 'content-type': 'text/plain' }).end('backend unavailable');
      void fetch(upstream, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
        .then(async (answer) => res.writeHead(answer.status, { 'content-type': 'application/json' }).end(await answer.text()))
        .catch(() => res.writeHead(502).end());
    });
  });
  await new Promise<void>((r) => node.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(node.address() as AddressInfo).port}/v3/${key}`,
    fail: (f) => (failing = f),
    close: () => node.close(),
  };
}
