import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { toChecksumAddress } from '../../domain/eoa';
import { ownerOf } from '../../domain/rendezvous';
import { confirmationMessage, ownerKey, type WhitelistChange } from '../../domain/whitelist-messages';
import { depositCompletedSignal, executionWorkflowId, whitelistBatchWorkflowId, type WhitelistBatchResult } from '../../contracts/temporal';
import { eventually, newWallet, sampleIntent, signedBody, type TestWallet } from '../support/executions';
import { request } from '../support/http';
import { ProcessStack } from '../support/process-stack';
import { nodeEntries, randomEoa, setFault } from '../support/whitelists';

describe('faults: real processes killed and restarted', function () {
  this.timeout(120_000);
  let stack: ProcessStack;

  before(async function () {
    this.timeout(120_000);
    stack = await new ProcessStack().start();
  });
  after(async () => {
    await stack?.stop();
  });

  const api = (method: string, path: string, json?: unknown, token?: string) => request(stack.apiUrl, method, path, { json, token });

  async function prepareOne(wallet: TestWallet = newWallet()) {
    const intent = sampleIntent();
    const executionId = `ex-${randomUUID()}`;
    const res = await api('POST', `/api/v1/executions/${wallet.id}`, { executionId, intent }, stack.token);
    assert.equal(res.status, 201, res.text);
    return { wallet, intent, executionId };
  }
  const status = async (e: { wallet: TestWallet; executionId: string }) =>
    (await api('GET', `/api/v1/executions/${e.wallet.id}/${e.executionId}`)).body?.result;

  function changeOwnedBy(index: number, kind: WhitelistChange['kind'] = 'developer'): WhitelistChange {
    const urls = stack.nodes.map((n) => n.url);
    for (;;) {
      const change: WhitelistChange = { op_type: 'add_entry', kind, entry: toChecksumAddress(randomEoa()) };
      if (ownerOf(ownerKey(change), urls) === urls[index]) return change;
    }
  }
  const spread = () => [0, 1, 2].map((i) => changeOwnedBy(i));
  const holds = async (index: number, change: WhitelistChange) =>
    (await nodeEntries(stack.nodes[index].url, change.kind)).includes(change.entry);
  const batchResult = (batchId: string) =>
    stack.client.workflow.getHandle(whitelistBatchWorkflowId(batchId)).result() as Promise<WhitelistBatchResult>;

  it('when the worker is SIGKILLed with executions between states and a batch in flight, then a new worker resumes all of them to the right end state, and the batch is applied once', async () => {
    const a = await prepareOne(); // PREPARED; deposit arrives while no worker runs
    const b = await prepareOne(); // PREPARED with a signature; deposit while no worker runs → SIGNING
    const c = await prepareOne(); // OPERATION_PENDING before the kill; submitted after
    assert.equal(
      (await api('POST', `/api/v1/executions/${b.wallet.id}/submit`, signedBody(b.wallet, b.executionId, b.intent))).status,
      200,
    );
    assert.equal(
      (await api('POST', `/api/v1/executions/${c.wallet.id}/${c.executionId}/deposit`, { txHash: '0xc' }, stack.token)).status,
      200,
    );

    await setFault(stack.nodes[1].url, { delayMs: 3000 });
    const batch = spread();
    const res = await request(stack.apiUrl, 'POST', '/chain/whitelists/', { token: stack.token, json: batch, headers: { timeout: '500' } });
    assert.equal(res.status, 408, res.text);
    const batchId = res.headers.get('x-batch-id')!;
    await ProcessStack.kill(stack.worker);

    // Chain watchers keep signalling while no worker runs: Temporal holds the signals.
    for (const e of [a, b])
      await stack.client.workflow
        .getHandle(executionWorkflowId(e.wallet.id, e.executionId))
        .signal(depositCompletedSignal, { txHash: `0x${e.executionId.slice(3, 11)}` });
    await setFault(stack.nodes[1].url, { delayMs: 0 });
    await stack.startWorker();

    await eventually(async () => (await status(a))?.status === 'OPERATION_PENDING', 20_000);
    await eventually(async () => (await status(b))?.status === 'SIGNING', 20_000);
    assert.deepEqual(
      (await status(b)).history.map((h: any) => h.status),
      ['PREPARED', 'OPERATION_PENDING', 'SIGNING'],
    );
    const sub = await api('POST', `/api/v1/executions/${c.wallet.id}/submit`, signedBody(c.wallet, c.executionId, c.intent));
    assert.equal(sub.status, 200, sub.text);
    assert.equal(sub.body.result.status, 'SIGNING');

    // The in-flight activity died with the worker; its start-to-close timeout (15 s) lets the new worker retry it.
    const summary = await batchResult(batchId);
    assert.equal(summary.outcome?.status, 408);
    assert.deepEqual(Object.values(summary.nodes).sort(), ['applied', 'applied', 'applied']);
    for (let i = 0; i < 3; i++) assert.ok(await holds(i, batch[i]), `node ${i} holds its change`);
  });

  it('when the Temporal dev server is stopped, then the API answers 503 {error} with Retry-After quickly (no hang, no crash, never 500); after a restart on the same SQLite file every execution is still there with its history', async () => {
    const prepared = await prepareOne();
    const signed = await prepareOne();
    assert.equal(
      (await api('POST', `/api/v1/executions/${signed.wallet.id}/${signed.executionId}/deposit`, { txHash: '0x1' }, stack.token)).status,
      200,
    );
    assert.equal(
      (await api('POST', `/api/v1/executions/${signed.wallet.id}/submit`, signedBody(signed.wallet, signed.executionId, signed.intent)))
        .status,
      200,
    );

    await stack.stopTemporal();
    try {
      const started = Date.now();
      const down = await api('GET', `/api/v1/executions/${prepared.wallet.id}/${prepared.executionId}`);
      assert.equal(down.status, 503);
      assert.equal(down.headers.get('retry-after'), '1');
      assert.deepEqual(Object.keys(down.body), ['error', 'code']);
      assert.match(down.body.error, /may be retried safely/);
      assert.ok(!/grpc|ECONNREFUSED|127\.0\.0\.1/i.test(down.body.error), down.body.error);
      assert.ok(Date.now() - started < 8_000, `answered in ${Date.now() - started} ms`);
      const prep = await api('POST', `/api/v1/executions/${newWallet().id}`, { intent: { a: 1 } }, stack.token);
      assert.equal(prep.status, 503);
      assert.equal(prep.headers.get('retry-after'), '1');
      const wlStarted = Date.now();
      const wl = await request(stack.apiUrl, 'POST', '/chain/whitelists/', {
        token: stack.token,
        json: spread(),
        headers: { timeout: '2000' },
      });
      assert.equal(wl.status, 503, wl.text);
      assert.equal(wl.body.error, 'Service Unavailable');
      assert.equal(wl.headers.get('retry-after'), '1');
      // deadline 2 s + the API's 1 s margin + its 1 s "was it started?" check (4 s nominal). Each call
      // is bounded by api/temporal/call.ts: before it, the gRPC retry interceptor let a 5 s GET run 9.6 s.
      assert.ok(Date.now() - wlStarted < 8_000, `whitelist answered in ${Date.now() - wlStarted} ms`);
      assert.equal((await api('GET', '/healthz')).status, 200, 'the API process is still up');
      assert.equal((await api('GET', '/readyz')).status, 503);
    } finally {
      await stack.startTemporal();
    }
    const back = await eventually(async () => {
      const r = await status(signed);
      return r?.status === 'SIGNING' && r;
    }, 30_000);
    assert.deepEqual(
      back.history.map((h: any) => h.status),
      ['PREPARED', 'OPERATION_PENDING', 'SIGNING'],
    );
    // The signed execution has closed: the API answers it from the read model, whatever Temporal
    // does. The prepared one is open: the API asks its workflow, which needs the server back and the
    // worker polling it again (503 until then).
    const open = await eventually(async () => {
      const r = await status(prepared);
      return r !== undefined && r;
    }, 30_000);
    assert.equal(open.status, 'PREPARED');
    // And the worker came back by itself: a new execution goes all the way. Right after the restart
    // the server may still be working through its queues, and a call the API cannot finish in time
    // is answered 503 with Retry-After (never a 500): the client retries it, as this one does.
    // Deposit and submit are idempotent, so a retry after a 503 whose change was made is answered 200.
    const accepted = (method: string, route: string, body: unknown, token?: string) =>
      eventually(
        async () => {
          const res = await api(method, route, body, token);
          if (res.status !== 503) return res;
          assert.equal(res.headers.get('retry-after'), '1', res.text);
          return undefined;
        },
        60_000,
        1_000,
      );
    const fresh = await prepareOne();
    const deposited = await accepted(
      'POST',
      `/api/v1/executions/${fresh.wallet.id}/${fresh.executionId}/deposit`,
      { txHash: '0x2' },
      stack.token,
    );
    assert.equal(deposited.status, 200, deposited.text);
    const sub = await accepted(
      'POST',
      `/api/v1/executions/${fresh.wallet.id}/submit`,
      signedBody(fresh.wallet, fresh.executionId, fresh.intent),
    );
    assert.equal(sub.body?.result?.status, 'SIGNING', sub.text);
  });

  it('when a storage node is SIGKILLed mid-batch after applying, then the batch answers 500, and once the node is back the batch converges: nothing of it remains on any node', async () => {
    const batch = spread();
    await setFault(stack.nodes[1].url, { delayMs: 2000 });
    // A long deadline: the 500 comes as soon as the node is known to be gone, and a loaded machine
    // must not turn it into a 408.
    const pending = request(stack.apiUrl, 'POST', '/chain/whitelists/', { token: stack.token, json: batch, headers: { timeout: '30000' } });
    let res;
    try {
      await eventually(() => holds(1, batch[1]), 20_000, 50); // applied durably, answer not yet sent
      await ProcessStack.kill(stack.nodes[1]);
      res = await pending;
    } finally {
      await stack.restartNode(1);
    }
    assert.equal(res.status, 500, res.text);
    const summary = await batchResult(res.headers.get('x-batch-id')!);
    assert.equal(summary.outcome?.status, 500);
    for (let i = 0; i < 3; i++) assert.equal(await holds(i, batch[i]), false, `node ${i} holds nothing of the failed batch`);
    assert.equal(summary.nodes[stack.nodes[1].url], 'reverted');
  });

  for (const fault of ['truncated', 'wrong-shape'] as const) {
    it(`when a node answers with a ${fault} body, then it is 500 and, once the node is healthy again, no node holds any change of the batch`, async () => {
      const batch = spread();
      await setFault(stack.nodes[2].url, { fault });
      const res = await request(stack.apiUrl, 'POST', '/chain/whitelists/', {
        token: stack.token,
        json: batch,
        headers: { timeout: '30000' },
      });
      await setFault(stack.nodes[2].url, { fault: 'none' });
      assert.equal(res.status, 500, res.text);
      assert.equal(res.body.error, 'Internal Server Error');
      const summary = await batchResult(res.headers.get('x-batch-id')!);
      assert.equal(summary.outcome?.status, 500);
      for (let i = 0; i < 3; i++) assert.equal(await holds(i, batch[i]), false, `node ${i}`);
    });
  }

  it("when the API is SIGKILLed during a submit and restarted, then the client's retry with the same signature gets 200, not 409", async () => {
    const e = await prepareOne();
    assert.equal(
      (await api('POST', `/api/v1/executions/${e.wallet.id}/${e.executionId}/deposit`, { txHash: '0x9' }, stack.token)).status,
      200,
    );
    const body = signedBody(e.wallet, e.executionId, e.intent);
    const inFlight = api('POST', `/api/v1/executions/${e.wallet.id}/submit`, body).then(
      (r) => r.status,
      (err) => `error: ${err.cause?.code ?? err.message}`,
    );
    await new Promise((r) => setTimeout(r, 30));
    await ProcessStack.kill(stack.api);
    const first = await inFlight;
    await stack.startApi();
    const retry = await api('POST', `/api/v1/executions/${e.wallet.id}/submit`, body);
    assert.equal(retry.status, 200, `first attempt: ${first}; retry: ${retry.text}`);
    assert.equal(retry.body.result.status, 'SIGNING');
    assert.equal((await status(e)).signedPayload.signature, body.signature);
  });

  it('when a batch succeeds, then its confirmations are what the nodes hold (control for the fault cases above)', async () => {
    const batch = spread();
    const res = await request(stack.apiUrl, 'POST', '/chain/whitelists/', { token: stack.token, json: batch });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, batch.map(confirmationMessage));
    for (let i = 0; i < 3; i++) assert.ok(await holds(i, batch[i]));
  });
});
