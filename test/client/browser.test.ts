import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { IntentClient } from '@intent-service/client';
import { build } from 'esbuild';
import pino from 'pino';
import type { RunningApi } from '../../api/server';
import { projectRoot } from '../../config/config';
import { CHROMIUM, launchChromium } from '../support/browser';
import { sampleIntent } from '../support/executions';
import { getStack, startStackApi, type Stack } from '../support/stack';

// The wallet page: it holds its own key, signs and submits through the SDK, and lists the watch
// events. The API it calls is another origin, allowed by CORS_ORIGINS.
const PAGE_SCRIPT = `
import { IntentClient, nacl25519Signer, walletOf } from '@intent-service/client';

const api = new URLSearchParams(location.search).get('api');
const signer = nacl25519Signer(crypto.getRandomValues(new Uint8Array(32)));
const wallet = walletOf(signer);
const client = new IntentClient({ baseUrl: api });
const $ = (id) => document.getElementById(id);
$('wallet').textContent = wallet;

window.submitAndWatch = async (executionId, intent) => {
  try {
    const { status } = await client.submit(signer, { executionId, intent, domain: location.hostname });
    $('status').textContent = 'submitted: ' + status;
    for await (const event of client.watch(wallet, executionId, { reconnectDelayMs: 200 })) {
      const li = document.createElement('li');
      li.dataset.status = event.status;
      li.textContent = event.status + (event.id ? ' (version ' + event.id + ')' : '');
      $('events').append(li);
    }
    $('status').textContent = 'done';
  } catch (err) {
    $('status').textContent = 'error: ' + err;
  }
};
`;

const PAGE_HTML = `<!doctype html>
<html><head><meta charset="utf-8"><title>intent-service wallet</title>
<style>body{font:16px system-ui;margin:2em}code{font-size:13px}li{margin:.3em 0}</style></head>
<body><h1>Wallet</h1><p>wallet <code id="wallet">…</code></p><p>status <b id="status">idle</b></p><ol id="events"></ol>
<script type="module" src="/app.js"></script></body></html>`;

/** The SDK alone as a browser would load it: minified, and its gzip size. */
async function sdkBundleSize(): Promise<{ min: number; gzip: number }> {
  const out = await build({
    stdin: { contents: "export * from '@intent-service/client';", resolveDir: projectRoot, loader: 'js' },
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    write: false,
  });
  const code = out.outputFiles[0].contents;
  return { min: code.length, gzip: gzipSync(code, { level: 9 }).length };
}

describe('client: the SDK in a real browser (Chromium through playwright-core)', function () {
  this.timeout(120_000);
  let stack: Stack;
  let api: RunningApi | undefined;
  let server: Server | undefined;
  let browser: Awaited<ReturnType<typeof launchChromium>> | undefined;

  before(async () => {
    assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: npm test's pretest installs it as root (apt-get install chromium)`);
    stack = await getStack();
  });
  after(async () => {
    await browser?.close();
    await api?.close(1000);
    server?.close();
  });

  it('when a page of another origin bundles the SDK (esbuild), holds a key, submits and watches, then it shows the events up to SIGNING', async () => {
    const bundle = await build({
      stdin: { contents: PAGE_SCRIPT, resolveDir: projectRoot, loader: 'js' },
      bundle: true,
      minify: true,
      format: 'esm',
      platform: 'browser',
      write: false,
    });
    const script = bundle.outputFiles[0].contents;
    server = createServer((req, res) => {
      if (req.url === '/app.js') res.writeHead(200, { 'content-type': 'text/javascript' }).end(script);
      else res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE_HTML);
    });
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
    const origin = `http://localhost:${(server.address() as AddressInfo).port}`;
    api = await startStackApi(stack, { config: { ...stack.config, port: 0, corsOrigins: [origin] }, logger: pino({ level: 'silent' }) });

    browser = await launchChromium();
    const page = await browser.context.newPage();
    const consoleLines: string[] = [];
    page.on('console', (m) => consoleLines.push(`${m.type()}: ${m.text()}`));
    await page.goto(`${origin}/?api=${encodeURIComponent(api.url)}`);
    await page.waitForFunction("document.getElementById('wallet').textContent !== '…'");
    const wallet = (await page.textContent('#wallet'))!;

    // The backend prepares (prepare and deposit need a token: they are not for browsers).
    const backend = new IntentClient({ baseUrl: stack.api.url, token: stack.tokens.all });
    const executionId = `browser-${randomUUID()}`;
    const intent = sampleIntent();
    await backend.prepare(wallet, { executionId, intent, ttlSeconds: 600 });
    await page.evaluate(`void window.submitAndWatch(${JSON.stringify(executionId)}, ${JSON.stringify(intent)})`);
    await page.waitForSelector('#events li[data-status="PREPARED"]', { timeout: 30_000 });
    assert.equal(await page.textContent('#status'), 'submitted: PREPARED');
    await backend.deposit(wallet, executionId, { txHash: `0x${randomUUID().replace(/-/g, '')}` });
    await page
      .waitForFunction("document.getElementById('status').textContent === 'done'", undefined, { timeout: 30_000 })
      .catch(async (err: Error) =>
        assert.fail(`${err.message}; page status ${await page.textContent('#status')}; console: ${consoleLines.join(' | ')}`),
      );

    const shown = (await page.evaluate("[...document.querySelectorAll('#events li')].map((li) => li.dataset.status)")) as string[];
    assert.equal(shown[0], 'PREPARED');
    assert.equal(shown.at(-1), 'SIGNING');
    assert.equal((await backend.get(wallet, executionId)).signedPayload?.connectEnvelope.domain, 'localhost');
    const dir = path.join(projectRoot, 'test-results');
    mkdirSync(dir, { recursive: true });
    await page.screenshot({ path: path.join(dir, 'browser-sdk.png'), fullPage: true });

    const size = await sdkBundleSize();
    console.log(`    the SDK's browser bundle: ${size.min} bytes minified, ${size.gzip} bytes min+gzip`);
    assert.ok(size.gzip < 32 * 1024, `the SDK bundle grew to ${size.gzip} bytes min+gzip`);
  });
});
