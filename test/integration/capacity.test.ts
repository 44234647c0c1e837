import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import type { ChildService } from '../../scripts/lib/child-service';
import { newWallet, sampleIntent, signedBody, type TestWallet } from '../support/executions';
import { request, type HttpAnswer } from '../support/http';
import { ProcessStack } from '../support/process-stack';
import { metricSum, scrape } from '../support/prometheus';

const OPEN_RUNS = 5;
const PER_WALLET = 2;

/**
 * Admission (docs/decisions/0082): two APIs share one read model, and together they admit no more
 * open executions than CAPACITY_OPEN_RUNS (503 CAPACITY_FULL beyond it) and no more of one wallet's
 * than CAPACITY_PER_WALLET (429 WALLET_CAPACITY_FULL); the executions already open keep answering.
 */
describe('capacity: admission of new executions across APIs', function () {
  this.timeout(120_000);
  let stack: ProcessStack;
  let second: { api: ChildService; url: string };
  const admitted: Array<{ wallet: TestWallet; executionId: string; intent: unknown }> = [];
  /** The refusals the APIs answered, by the metric's reason. */
  const refused = { capacity: 0, wallet: 0 };

  before(async () => {
    stack = await new ProcessStack({
      env: {
        CAPACITY_OPEN_RUNS: String(OPEN_RUNS),
        CAPACITY_PER_WALLET: String(PER_WALLET),
        // The repair schedule starts a run on the service's queue every minute, and a running one takes a
        // place as the probe below does: the counts these cases assert would then be one short.
        WHITELIST_REPAIR_INTERVAL_S: '0',
      },
    }).start();
    second = await stack.startExtraApi('fault-api-2');
  });
  after(async () => {
    await ProcessStack.kill(second?.api);
    await stack?.stop();
  });

  const prepareOn = async (base: string, wallet: TestWallet): Promise<HttpAnswer> => {
    const executionId = `cap-${randomUUID()}`;
    const intent = sampleIntent();
    const answer = await request(base, 'POST', `/api/v1/executions/${wallet.id}`, { token: stack.token, json: { executionId, intent } });
    if (answer.status === 201) admitted.push({ wallet, executionId, intent });
    if (answer.body?.code === 'CAPACITY_FULL') refused.capacity++;
    if (answer.body?.code === 'WALLET_CAPACITY_FULL') refused.wallet++;
    return answer;
  };

  it('when a wallet already holds its share of open executions, then its next prepare is 429 WALLET_CAPACITY_FULL with Retry-After, on either API', async () => {
    const wallet = newWallet();
    for (let i = 0; i < PER_WALLET; i++) assert.equal((await prepareOn(i % 2 ? second.url : stack.apiUrl, wallet)).status, 201);
    for (const base of [stack.apiUrl, second.url]) {
      const refused = await prepareOn(base, wallet);
      assert.equal(refused.status, 429, JSON.stringify(refused.body));
      assert.equal(refused.body.code, 'WALLET_CAPACITY_FULL');
      assert.match(refused.body.error, /open executions/);
      assert.equal(refused.headers.get('retry-after'), '30');
    }
  });

  it('when prepares beyond the open runs arrive at once on two APIs, then exactly the free places are admitted and the rest are 503 CAPACITY_FULL with Retry-After', async () => {
    const free = OPEN_RUNS - admitted.length;
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => prepareOn(i % 2 ? second.url : stack.apiUrl, newWallet())));
    const statuses = answers.map((a) => a.status).sort();
    assert.deepEqual(
      statuses,
      [...Array<number>(free).fill(201), ...Array<number>(12 - free).fill(503)],
      JSON.stringify(answers.map((a) => a.body)),
    );
    for (const refused of answers.filter((a) => a.status === 503)) {
      assert.equal(refused.body.code, 'CAPACITY_FULL');
      assert.equal(refused.headers.get('retry-after'), '10');
    }
  });

  /** Deposits and signs an admitted execution through `base`, then waits until the read model holds it SIGNING (final). */
  const sign = async (base: string, { wallet, executionId, intent }: (typeof admitted)[number]) => {
    const path = `/api/v1/executions/${wallet.id}/${executionId}`;
    const deposit = await request(base, 'POST', `${path}/deposit`, {
      token: stack.token,
      json: { txHash: `0x${randomBytes(32).toString('hex')}` },
    });
    assert.equal(deposit.status, 200, JSON.stringify(deposit.body));
    assert.equal(deposit.body.result.status, 'OPERATION_PENDING');
    const signed = await request(base, 'POST', `/api/v1/executions/${wallet.id}/submit`, { json: signedBody(wallet, executionId, intent) });
    assert.equal(signed.status, 200, JSON.stringify(signed.body));
    await until(async () => (await request(base, 'GET', `/api/v1/executions/${wallet.id}?status=SIGNING`)).body?.result?.length > 0);
  };

  /** Prepares (alternating APIs) until one is admitted, for at most `ms`. */
  const admittedWithin = async (ms: number): Promise<HttpAnswer> => {
    const deadline = Date.now() + ms;
    for (let i = 0; ; i++) {
      const answer = await prepareOn(i % 2 ? second.url : stack.apiUrl, newWallet());
      if (answer.status !== 503 || Date.now() > deadline) return answer;
      await new Promise((r) => setTimeout(r, 250));
    }
  };

  it('when the service is full, then its open executions still answer GET, deposit and submit, and a signed one frees its place', async () => {
    const entry = admitted[0];
    const path = `/api/v1/executions/${entry.wallet.id}/${entry.executionId}`;
    for (const base of [stack.apiUrl, second.url]) assert.equal((await request(base, 'GET', path)).status, 200);
    assert.equal((await prepareOn(stack.apiUrl, newWallet())).status, 503, 'full');
    await sign(second.url, entry);
    const answer = await admittedWithin(10_000);
    assert.equal(answer.status, 201, JSON.stringify(answer.body));
    assert.equal((await prepareOn(stack.apiUrl, newWallet())).status, 503, 'one place was freed, one was taken');
  });

  it('when another workflow runs on the task queue, then it takes a place as an open execution does, until it closes', async () => {
    const query = `TaskQueue = '${stack.taskQueue}' AND ExecutionStatus = 'Running' AND WorkflowType = 'capacityProbe'`;
    // A type no worker registers: its task fails and is retried, so the run stays open, as a webhook delivery to a receiver that is down does.
    const probe = await stack.client.workflow.start('capacityProbe', {
      taskQueue: stack.taskQueue,
      workflowId: `probe-${randomUUID()}`,
      args: [],
    });
    await until(async () => (await stack.client.workflow.count(query)).count === 1);
    // Each API counts the other runs at most every 5 s.
    await new Promise((r) => setTimeout(r, 5_500));
    await sign(stack.apiUrl, admitted[1]);
    assert.equal((await prepareOn(second.url, newWallet())).status, 503, 'the probe holds the freed place');
    assert.equal((await prepareOn(stack.apiUrl, newWallet())).status, 503, 'on either API');
    await probe.terminate('capacity test');
    const answer = await admittedWithin(15_000);
    assert.equal(answer.status, 201, JSON.stringify(answer.body));
  });

  it('when prepares were refused, then each API counted its own in intent_execution_prepares_refused_total by reason', async () => {
    // The ready line of each API names its operator URL (OPERATOR_PORT 0: a free port).
    const operatorUrls = await Promise.all(
      [stack.api!, second.api].map(async (api) => (JSON.parse((await api.ready).input) as { operatorUrl: string }).operatorUrl),
    );
    const samples = await Promise.all(operatorUrls.map((url) => scrape(`${url}/metrics`)));
    const counted = (reason: string) =>
      samples.reduce((n, s) => n + metricSum(s, 'intent_execution_prepares_refused_total', { reason }), 0);
    assert.ok(refused.capacity > 0 && refused.wallet > 0);
    assert.equal(counted('capacity'), refused.capacity);
    assert.equal(counted('wallet'), refused.wallet);
  });
});

/** Polls `check` every 250 ms until it holds, for at most 15 s. */
async function until(check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met within 15 s');
    await new Promise((r) => setTimeout(r, 250));
  }
}
