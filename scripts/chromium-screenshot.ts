import { spawn } from 'node:child_process';
import { CHROMIUM_FLAGS } from './lib/chromium-flags';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { Readable, Writable } from 'node:stream';

const USAGE = `usage: node dist/scripts/chromium-screenshot.js --url URL --out FILE.png [--wait-for TEXT]... [--timeout-ms 30000]
  [--chromium /usr/bin/chromium] [--width 1600] [--height 1000]
Opens URL in headless Chromium, waits until the page shows every --wait-for text, and saves a PNG.`;

/**
 * Headless Chromium's `--screenshot` shoots at the load event, before a single-page app has fetched
 * anything, and `--virtual-time-budget` never ends on the Temporal UI (it long-polls the history of
 * a running workflow, and virtual time waits for the network). So this drives Chromium over the
 * DevTools protocol instead, on `--remote-debugging-pipe` (fds 3 and 4; no WebSocket, no package):
 * open the page, poll its text until the awaited words appear, then capture.
 */
async function main(): Promise<number> {
  const { values } = parseArgs({
    strict: true,
    options: {
      url: { type: 'string' },
      out: { type: 'string' },
      'wait-for': { type: 'string', multiple: true, default: [] },
      'timeout-ms': { type: 'string', default: '30000' },
      chromium: { type: 'string', default: '/usr/bin/chromium' },
      width: { type: 'string', default: '1600' },
      height: { type: 'string', default: '1000' },
    },
  });
  if (!values.url || !values.out) {
    process.stderr.write(USAGE + '\n');
    return 2;
  }
  const profile = mkdtempSync(path.join(os.tmpdir(), 'chromium-shot-'));
  const chrome = spawn(
    values.chromium,
    [
      ...CHROMIUM_FLAGS,
      `--user-data-dir=${profile}`,
      `--window-size=${values.width},${values.height}`,
      '--remote-debugging-pipe',
      'about:blank',
    ],
    {
      stdio: ['ignore', 'ignore', 'ignore', 'pipe', 'pipe'],
    },
  );
  const cdp = devtools(chrome.stdio[3] as Writable, chrome.stdio[4] as Readable);
  try {
    const { targetId } = await cdp.send('Target.createTarget', { url: 'about:blank' });
    const { sessionId } = await cdp.send('Target.attachToTarget', { targetId, flatten: true });
    const width = Number(values.width);
    const height = Number(values.height);
    await cdp.send('Emulation.setDeviceMetricsOverride', { width, height, deviceScaleFactor: 1, mobile: false }, sessionId);
    await cdp.send('Page.navigate', { url: values.url }, sessionId);
    const deadline = Date.now() + Number(values['timeout-ms']);
    const wanted = values['wait-for'] as string[];
    for (;;) {
      const { result } = await cdp.send(
        'Runtime.evaluate',
        { expression: 'document.body ? document.body.innerText : ""', returnByValue: true },
        sessionId,
      );
      const text = String(result?.value ?? '');
      const missing = wanted.filter((w) => !text.includes(w));
      if (missing.length === 0) break;
      if (Date.now() > deadline) throw new Error(`the page never showed ${missing.join(', ')}; it shows:\n${text.slice(0, 2000)}`);
      await new Promise((r) => setTimeout(r, 500));
    }
    // Let fonts and late layout settle once the data is there.
    await new Promise((r) => setTimeout(r, 1000));
    const { data } = await cdp.send('Page.captureScreenshot', { format: 'png' }, sessionId);
    writeFileSync(values.out, Buffer.from(data, 'base64'));
    process.stderr.write(`wrote ${values.out}\n`);
    return 0;
  } finally {
    chrome.kill('SIGTERM');
    await new Promise((r) => chrome.once('exit', r));
    rmSync(profile, { recursive: true, force: true });
  }
}

/** A minimal DevTools-protocol client over Chromium's pipe: NUL-separated JSON messages. */
function devtools(input: Writable, output: Readable) {
  let nextId = 1;
  const pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
  let buffer = '';
  output.setEncoding('utf8');
  output.on('data', (chunk: string) => {
    buffer += chunk;
    let end: number;
    while ((end = buffer.indexOf('\0')) >= 0) {
      const message = JSON.parse(buffer.slice(0, end));
      buffer = buffer.slice(end + 1);
      const waiter = message.id !== undefined ? pending.get(message.id) : undefined;
      if (!waiter) continue;
      pending.delete(message.id);
      if (message.error) waiter.reject(new Error(`${message.error.message} (${message.error.code})`));
      else waiter.resolve(message.result);
    }
  });
  return {
    send(method: string, params: object = {}, sessionId?: string): Promise<any> {
      const id = nextId++;
      input.write(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }) + '\0');
      return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
    },
  };
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`screenshot failed: ${(err as Error).message}\n`);
    process.exit(1);
  },
);
