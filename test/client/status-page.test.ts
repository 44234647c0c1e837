import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Page } from 'playwright-core';
import { projectRoot } from '../../config/config';
import { testSettings } from '../../scripts/lib/test-settings';
import { CHROMIUM, launchChromium } from '../support/browser';
import { TestChain } from '../support/chain';
import { depositHelpers, startFollowingStack, type PreparedDeposit } from '../support/deposit-helpers';
import { eventually, newWallet, sampleIntent, signedBody } from '../support/executions';
import { request } from '../support/http';
import type { ProcessStack } from '../support/process-stack';

const CHAIN = 'evm:31337';
const CONFIRMATIONS = 3;
const ETH = 10n ** 18n;

/**
 * The depositor's status pages in a real Chromium (playwright-core): served by the API process of
 * a real stack (Temporal dev server, worker with its chain watcher and refunds, storage nodes) on a
 * real anvil chain whose blocks the test mines, so every page state waits for a block the test made.
 */
describe('client: the status pages in a real browser (Chromium), on a real anvil chain', function () {
  this.timeout(240_000);
  let chain: TestChain;
  let stack: ProcessStack;
  let browser: Awaited<ReturnType<typeof launchChromium>>;
  let page: Page | undefined;

  before(async function () {
    this.timeout(180_000);
    assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: npm test's pretest installs it as root (apt-get install chromium)`);
    chain = await TestChain.start();
    stack = await startFollowingStack(chain, CHAIN, CONFIRMATIONS, {
      // The watcher keeps its signals two windows below its checkpoint (48 blocks here): a transaction
      // page says "paid no deposit address of ours" once they are gone and the execution has not
      // written its deposit yet. With blocks mined every 300 ms while a test waits, a window of 6 left
      // a restarted worker under 4 s to write it, and the page settled on that answer.
      CHAIN_REORG_WINDOW: '24',
      REFUND_PAYMENTS: 'on',
      SSE_POLL_MS: '100',
      SSE_MAX_STREAMS_PER_CLIENT: '2',
    });
    browser = await launchChromium();
  });
  afterEach(async () => {
    await page?.close();
    page = undefined;
  });
  after(async () => {
    await browser?.close();
    await stack?.stop();
    await chain?.stop();
  });

  const deposits = depositHelpers(
    () => stack,
    () => chain,
    CHAIN,
  );
  const pageUrl = (e: Pick<PreparedDeposit, 'executionId'> & { wallet: { id: string } }) =>
    `${stack.apiUrl}/status/${e.wallet.id}/${e.executionId}`;

  /** Opens `url` in a fresh tab, keeping what its console says for a failure's message. */
  async function open(url: string): Promise<{ page: Page; status: number; console: string[] }> {
    page = await browser.context.newPage();
    const console: string[] = [];
    page.on('console', (m) => console.push(`${m.type()}: ${m.text()}`));
    const res = await page.goto(url);
    return { page, status: res!.status(), console };
  }

  /** Mines a block every 300 ms until `done` resolves (refunds and deposits need blocks on top). */
  /** Mines a block every `everyMs` until `done` settles. */
  async function mining<T>(done: Promise<T>, everyMs = 300): Promise<T> {
    let over = false;
    const result = done.finally(() => (over = true));
    while (!over) {
      await chain.mine(1);
      await Promise.race([result.catch(() => undefined), sleep(everyMs)]);
    }
    return result;
  }

  it('when a depositor opens the page of an execution, then it follows it without a reload from PREPARED through the deposit confirming (n of N) to SIGNING', async () => {
    const e = await deposits.prepare({ minAmount: '1000', idPrefix: 'page' });
    const { page, status, console } = await open(pageUrl(e));
    assert.equal(status, 200);
    assert.equal(await page.getAttribute('.status', 'data-status'), 'PREPARED');
    assert.equal(await page.getAttribute('.reason', 'data-reason'), 'awaiting-deposit');
    assert.ok(await page.$('.qr svg'), 'the deposit address as a QR code');
    assert.equal(await page.textContent('dd a, dd code'), e.address, 'the deposit address, as text (no explorer on the dev chain)');
    await page.waitForSelector('main[data-following="stream"]');
    await page.evaluate('window.notReloaded = true');

    await chain.send(e.address, 1000n);
    await chain.mine(1);
    await page.waitForSelector('[data-confirmations="1/3"]', { timeout: 30_000 });
    assert.equal(await page.getAttribute('.reason', 'data-reason'), 'deposit-confirming');
    await chain.mine(1);
    await page.waitForSelector('[data-confirmations="2/3"]', { timeout: 30_000 });
    if (testSettings().STATUS_SCREENSHOT === 'write')
      await page.screenshot({ path: path.join(projectRoot, 'docs', 'status-page.png'), fullPage: true });
    await chain.mine(1);
    await page.waitForSelector('.status[data-status="OPERATION_PENDING"]', { timeout: 30_000 });
    assert.equal(await page.getAttribute('.reason', 'data-reason'), 'awaiting-signature');

    const submitted = await request(stack.apiUrl, 'POST', `/api/v1/executions/${e.wallet.id}/submit`, {
      json: signedBody(e.wallet, e.executionId, e.body.intent),
    });
    assert.equal(submitted.status, 200, submitted.text);
    await page
      .waitForSelector('.status[data-status="SIGNING"]', { timeout: 30_000 })
      .catch((err: Error) => assert.fail(`${err.message}; console: ${console.join(' | ')}`));
    assert.equal(await page.evaluate('window.notReloaded'), true, 'the page was updated in place, never reloaded');
    const timeline = (await page.textContent('ol.timeline'))!.replace(/\s+/g, ' ');
    assert.match(timeline, /Deposit seen: 0x[0-9a-f]{64}, block \d+, 3 of 3 confirmations/);
    assert.match(timeline, /Signature received/);
    assert.match(timeline, /Signed: the execution is signing/);
    assert.equal(await page.getAttribute('main', 'data-final'), 'true');
  });

  it('when a deposit the execution does not take is paid back by the service, then the page shows the refund transaction', async () => {
    const e = await deposits.prepare({ minAmount: (2n * ETH).toString(), idPrefix: 'page-refund' });
    const { page } = await open(pageUrl(e));
    await chain.send(e.address, ETH / 10n);
    const refundTx = await mining(
      page.waitForSelector('[data-refund-tx]', { timeout: 120_000 }).then((el) => el.getAttribute('data-refund-tx')),
    );
    assert.match(refundTx!, /^0x[0-9a-f]{64}$/);
    const row = (await deposits.record(e)).refunds?.rows?.[0];
    assert.equal(row?.state, 'refunded');
    assert.equal(row?.refundTxHash, refundTx);
    assert.match((await page.textContent('table'))!, /below the minimum.*paid back/s);
  });

  it('when the chain watcher has not reached a deposit transaction yet, then its page says where the watcher is and where the transaction is, and follows it until taken', async () => {
    const e = await deposits.prepare({ minAmount: '1000', idPrefix: 'page-tx' });
    // No worker: the watcher reads nothing, and nothing answers its query either.
    await stack.killWorker();
    let restarted = false;
    try {
      const tx = await chain.send(e.address, 5000n);
      await chain.mine(1);
      const block = await chain.blockOf(tx);
      const { page, status } = await open(`${stack.apiUrl}/status/tx/${CHAIN}/${tx}`);
      assert.equal(status, 404);
      assert.equal(await page.getAttribute('.reason', 'data-reason'), 'DEPOSIT_NOT_REACHED');
      assert.match(
        (await page.textContent('.reason'))!,
        new RegExp(`read the chain up to block \\d+; your transaction is in block ${block}`),
      );
      const lookup = await request(stack.apiUrl, 'GET', `/api/v1/deposits/${CHAIN}/${tx}`);
      assert.equal(lookup.status, 404);
      assert.equal(lookup.body.code, 'DEPOSIT_NOT_REACHED');
      await stack.startWorker();
      restarted = true;
      // A block a second: the worker just started must take the deposit and write it well within the 48 blocks.
      await mining(
        page.waitForSelector('li[data-outcome="taken"]', { timeout: 90_000 }).catch(async (err: Error) => {
          throw new Error(`${err.message}; the page says: ${await page.textContent('.reason').catch(() => '?')}`);
        }),
        1000,
      );
      assert.match((await page.textContent('li[data-outcome="taken"]'))!, /taken as the deposit of execution/);
    } finally {
      if (!restarted) await stack.startWorker();
    }
  });

  it('when a page cannot get an event stream (the client holds its streams), then it falls back to asking for the page and still shows the change', async () => {
    const wallet = newWallet();
    const executionId = `page-poll-${Date.now()}`;
    const prepared = await request(stack.apiUrl, 'POST', `/api/v1/executions/${wallet.id}`, {
      json: { executionId, intent: sampleIntent() },
      token: stack.token,
    });
    assert.equal(prepared.status, 201, prepared.text);
    const events = `${stack.apiUrl}/api/v1/executions/${wallet.id}/${executionId}/events`;
    const held = [new AbortController(), new AbortController()];
    try {
      for (const h of held) assert.equal((await fetch(events, { signal: h.signal })).status, 200);
      const { page } = await open(pageUrl({ wallet, executionId }));
      await page.waitForSelector('main[data-following="polling"]', { timeout: 15_000 });
      const reported = await request(stack.apiUrl, 'POST', `/api/v1/executions/${wallet.id}/${executionId}/deposit`, {
        json: { txHash: '0xpolled' },
        token: stack.token,
      });
      assert.equal(reported.status, 200, reported.text);
      await page.waitForSelector('.status[data-status="OPERATION_PENDING"]', { timeout: 20_000 });
    } finally {
      for (const h of held) h.abort();
    }
  });

  it('when an execution id with <script> in it is asked, then the page shows it as text and runs nothing of it', async () => {
    const wallet = newWallet();
    const { page, status } = await open(`${stack.apiUrl}/status/${wallet.id}/${encodeURIComponent('<script>window.injected=1</script>')}`);
    assert.equal(status, 400);
    assert.match((await page.textContent('.reason'))!, /“<script>window\.injected=1<\/script>” is not an execution id/);
    assert.equal(await page.evaluate('window.injected'), undefined);
    assert.equal(await page.evaluate('document.scripts.length'), 1, "the page's own script only");
    const res = await request(stack.apiUrl, 'GET', `/status/${wallet.id}/${encodeURIComponent('<script>')}`);
    assert.match(res.headers.get('content-security-policy')!, /script-src 'self'/);
    assert.ok(res.text.includes('&lt;script&gt;') && !res.text.includes('<script>'), res.text);
  });

  it('when the page is opened without JavaScript, then the server-rendered answer shows the status and its reason', async () => {
    const e = await deposits.prepare({ minAmount: '1000', idPrefix: 'page-nojs' });
    const noScript = await launchChromium({ javaScriptEnabled: false });
    try {
      const tab = await noScript.context.newPage();
      const res = await tab.goto(pageUrl(e));
      assert.equal(res!.status(), 200);
      assert.equal(await tab.textContent('.status'), 'Waiting for the deposit');
      assert.match((await tab.textContent('.reason'))!, /Waiting for the deposit of at least 1000 base units/);
      assert.equal(await tab.getAttribute('main', 'data-following'), null, 'no script ran');
    } finally {
      await noScript.close();
    }
  });

  it('when an unknown execution is asked, then the answer is a 404 page', async () => {
    const res = await eventually(async () => {
      const r = await request(stack.apiUrl, 'GET', `/status/${newWallet().id}/nothing-here`);
      return r.status === 404 && r;
    }, 10_000);
    assert.match(res.headers.get('content-type')!, /^text\/html/);
    assert.match(res.text, /<h1>Not found<\/h1>/);
  });
});
