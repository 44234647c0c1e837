import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import type { RunningApi } from '../../api/server';
import { CHROMIUM, launchChromium } from '../support/browser';
import { cancelBody, newWallet, prepare } from '../support/executions';
import { request } from '../support/http';
import { getStack, startStackApi, type Stack } from '../support/stack';

/** A page server: the frontend origin that the browser test loads its script from. */
async function pageServer(html: string): Promise<{ server: Server; origin: string }> {
  const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(html));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

describe('integration: CORS on the public routes (CORS_ORIGINS, @koa/cors)', function () {
  this.timeout(90_000);
  let stack: Stack;
  let api: RunningApi;
  const allowed = 'https://app.example';
  let page: { server: Server; origin: string } | undefined;

  before(async () => {
    stack = await getStack();
  });
  after(async () => {
    await api?.close(1000);
    page?.server.close();
  });

  async function apiWithOrigins(origins: string[]) {
    await api?.close(1000);
    api = await startStackApi(stack, { config: { ...stack.config, port: 0, corsOrigins: origins }, logger: pino({ level: 'silent' }) });
    return api;
  }
  const preflight = (path: string, origin: string, method: string) =>
    request(api.url, 'OPTIONS', path, {
      headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': 'content-type' },
    });

  it("when a listed origin preflights a public route, then it is allowed for that route's methods only, without credentials; token routes and other origins get no CORS headers", async () => {
    await apiWithOrigins([allowed]);
    const ok = await preflight('/api/v1/executions/W/ex-1/cancel', allowed, 'POST');
    assert.equal(ok.status, 204);
    assert.equal(ok.headers.get('access-control-allow-origin'), allowed);
    assert.equal(ok.headers.get('access-control-allow-methods'), 'POST');
    assert.match(ok.headers.get('access-control-allow-headers') ?? '', /Content-Type/);
    assert.equal(ok.headers.get('access-control-allow-credentials'), null);
    for (const [path, method] of [
      ['/api/v1/executions/W/submit', 'POST'],
      ['/api/v1/executions/W', 'GET'],
      ['/api/v1/executions/W/ex-1/events', 'GET'],
      ['/api/v1/executions/W/ex-1', 'GET'],
    ]) {
      assert.equal((await preflight(path, allowed, method)).headers.get('access-control-allow-origin'), allowed, `${method} ${path}`);
    }
    for (const [path, method, origin] of [
      ['/api/v1/executions/W', 'POST', allowed], // prepare: a token route
      ['/api/v1/executions/W/ex-1/deposit', 'POST', allowed],
      ['/chain/whitelists/', 'POST', allowed],
      ['/api/v1/executions/W/ex-1/cancel', 'POST', 'https://evil.example'],
      ['/api/v1/executions/W/ex-1/cancel', 'DELETE', allowed],
    ]) {
      const res = await preflight(path, origin, method);
      assert.equal(res.headers.get('access-control-allow-origin'), null, `${method} ${path} from ${origin}`);
    }
  });

  it('when a listed origin reads an execution or gets an error, then the answer carries Access-Control-Allow-Origin and Vary: Origin; with CORS_ORIGINS empty, no answer does', async () => {
    await apiWithOrigins([allowed]);
    const wallet = newWallet();
    const executionId = `cors-${randomUUID()}`;
    assert.equal((await prepare(stack, wallet, { executionId })).status, 201);
    const read = await request(api.url, 'GET', `/api/v1/executions/${wallet.id}/${executionId}`, { headers: { origin: allowed } });
    assert.equal(read.status, 200);
    assert.equal(read.headers.get('access-control-allow-origin'), allowed);
    assert.match(read.headers.get('vary') ?? '', /Origin/);
    assert.match(read.headers.get('access-control-expose-headers') ?? '', /Retry-After/);
    const missing = await request(api.url, 'GET', `/api/v1/executions/${wallet.id}/nope`, { headers: { origin: allowed } });
    assert.equal(missing.status, 404);
    assert.equal(missing.headers.get('access-control-allow-origin'), allowed, 'errors are readable by the frontend too');

    await apiWithOrigins([]);
    const off = await request(api.url, 'GET', `/api/v1/executions/${wallet.id}/${executionId}`, { headers: { origin: allowed } });
    assert.equal(off.headers.get('access-control-allow-origin'), null);
    assert.equal((await preflight('/api/v1/executions/W/ex-1/cancel', allowed, 'POST')).headers.get('access-control-allow-origin'), null);
  });

  it('when a page of a listed origin runs in headless Chromium (playwright-core), then it reads, follows (EventSource) and cancels cross-origin, and the deposit route (a token route) is blocked by the browser', async () => {
    assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: npm test's pretest installs it as root (apt-get install chromium)`);
    const wallet = newWallet();
    const executionId = `browser-${randomUUID()}`;
    assert.equal((await prepare(stack, wallet, { executionId })).status, 201);
    // The page needs its own origin before the API is told to allow it.
    let html = '';
    page = await pageServer('');
    page.server.removeAllListeners('request');
    page.server.on('request', (_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(html));
    await apiWithOrigins([page.origin]);
    const base = `${api.url}/api/v1/executions/${wallet.id}/${executionId}`;
    const cancel = cancelBody(wallet, executionId);
    html = `<!doctype html><pre id="out">pending</pre><script>
(async () => {
  const out = {};
  try {
    out.read = (await (await fetch(${JSON.stringify(base)})).json()).result.status;
    out.events = [];
    const es = new EventSource(${JSON.stringify(`${base}/events`)});
    const closed = new Promise((resolve) => es.addEventListener('status', (e) => {
      out.events.push(JSON.parse(e.data).status);
      if (out.events.length === 1) fetch(${JSON.stringify(`${base}/cancel`)}, { method: 'POST', headers: { 'content-type': 'application/json' }, body: ${JSON.stringify(JSON.stringify(cancel))} })
        .then((r) => r.json()).then((b) => { out.cancel = b.result.status; });
      if (out.events.length === 2) { es.close(); resolve(); }
    }));
    await closed;
    try {
      await fetch(${JSON.stringify(`${base}/deposit`)}, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer x' }, body: '{"txHash":"0x1"}' });
      out.deposit = 'allowed';
    } catch (e) { out.deposit = 'blocked'; }
  } catch (e) { out.error = String(e); }
  document.getElementById('out').textContent = JSON.stringify(out);
})();
</script>`;
    const browser = await launchChromium();
    let text: string | null;
    try {
      const tab = await browser.context.newPage();
      await tab.goto(`${page.origin}/`);
      await tab.waitForFunction("document.getElementById('out').textContent !== 'pending'", undefined, { timeout: 30_000 });
      text = await tab.textContent('#out');
    } finally {
      await browser.close();
    }
    const result = JSON.parse(text ?? 'null');
    assert.deepEqual(result, { read: 'PREPARED', events: ['PREPARED', 'CANCELLED'], cancel: 'CANCELLED', deposit: 'blocked' });
  });
});
