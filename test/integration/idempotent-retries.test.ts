import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import type { RunningApi } from '../../api/server';
import { executionWorkflowId } from '../../contracts/temporal';
import path from 'node:path';
import { openDatabase } from '../../db/database';
import { RefundLedger } from '../../db/refund-ledger';
import { eventually, newWallet, sampleIntent, settledEventTypes, signedBody } from '../support/executions';
import { request, requestRetrying503, type HttpAnswer } from '../support/http';
import { getStack, startStackApi, type Stack } from '../support/stack';
import { childEnv } from '../../config/child-env';

/** Sends `count` requests, `concurrency` at a time, and tallies the answers by status. */
async function flood(
  count: number,
  concurrency: number,
  send: () => Promise<HttpAnswer>,
): Promise<{ byStatus: Map<number, number>; answers: HttpAnswer[] }> {
  const answers: HttpAnswer[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        next++;
        answers.push(await send());
      }
    }),
  );
  const byStatus = new Map<number, number>();
  for (const a of answers) byStatus.set(a.status, (byStatus.get(a.status) ?? 0) + 1);
  return { byStatus, answers };
}

// A submit body is public (GET returns it) and the submit route has no token, so its
// replays must cost the execution nothing durable: no history event, no Update budget.
describe('replays of accepted requests write nothing to the workflow history', function () {
  this.timeout(180_000);
  let stack: Stack;
  let secondApi: RunningApi;
  before(async () => {
    stack = await getStack();
    // A second API process of its own (no cache shared with the first): its replays reach the
    // workflow's Update validator, the path a fleet of APIs takes.
    secondApi = await startStackApi(stack);
  });
  after(async () => {
    await secondApi?.close(1000);
  });

  /** The number of events in the execution's history, as `temporal workflow show` prints them. */
  async function historyLength(workflowId: string): Promise<number> {
    // Wait for the read model write that the last accepted change scheduled: it is not a replay's.
    await settledEventTypes(stack, workflowId);
    const { stdout } = await promisify(execFile)(
      stack.temporalBinary,
      ['workflow', 'show', '--workflow-id', workflowId, '--output', 'json', '--address', stack.temporal.address],
      {
        encoding: 'utf8',
        env: childEnv({ TEMPORAL_VERSION_CHECK_DISABLED: '1' }),
        maxBuffer: 64 * 1024 * 1024,
      },
    );
    return JSON.parse(stdout).events.length;
  }

  // The test's own steps retry a 503 as any client does: the stack may still be busy with the
  // test that ran before (the file runs in any order).
  async function prepared(wallet: ReturnType<typeof newWallet>, executionId: string, intent: unknown = sampleIntent()) {
    const res = await requestRetrying503(stack.api.url, 'POST', `/api/v1/executions/${wallet.id}`, {
      token: stack.tokens.all,
      json: { executionId, intent },
    });
    assert.ok([200, 201].includes(res.status), res.text);
  }
  const deposit = (walletId: string, executionId: string, body: unknown) =>
    requestRetrying503(stack.api.url, 'POST', `/api/v1/executions/${walletId}/${executionId}/deposit`, {
      token: stack.tokens.all,
      json: body,
    });

  it('when an accepted submit is replayed 1,000 times (50 at a time, through two API processes), then the history gains 0 events, every answer is 200 with the status, and the execution still deposits to SIGNING by HTTP', async () => {
    const wallet = newWallet();
    const intent = sampleIntent();
    const executionId = `replay-${randomUUID()}`;
    await prepared(wallet, executionId, intent);
    const body = signedBody(wallet, executionId, intent);
    const path = `/api/v1/executions/${wallet.id}/submit`;
    const first = await requestRetrying503(stack.api.url, 'POST', path, { json: body });
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(first.body, { result: { status: 'PREPARED' } });
    const workflowId = executionWorkflowId(wallet.id, executionId);
    const before = await historyLength(workflowId);

    let i = 0;
    const { byStatus, answers } = await flood(1000, 50, () =>
      request(i++ % 2 === 0 ? stack.api.url : secondApi.url, 'POST', path, { json: body }),
    );
    for (const a of answers) {
      if (a.status === 200) assert.deepEqual(a.body, { result: { status: 'PREPARED' } });
      else {
        // Only an honest "busy, retry" is allowed besides 200 (never 500): Temporal sheds the
        // Updates past its in-flight limit per workflow before the second API has learned the answer.
        assert.equal(a.status, 503, a.text);
        assert.ok(Number(a.headers.get('retry-after')) >= 1);
      }
    }
    assert.ok((byStatus.get(200) ?? 0) >= 900, `answers by status: ${JSON.stringify([...byStatus])}`);
    assert.equal(await historyLength(workflowId), before, 'the replays added no history event');

    const dep = await deposit(wallet.id, executionId, { txHash: `0x${randomUUID().replace(/-/g, '')}` });
    assert.equal(dep.status, 200, dep.text);
    assert.equal(dep.body.result.status, 'SIGNING');
    const afterDeposit = await historyLength(workflowId);

    // The same signature after SIGNING, and the deposit again: 200 with the current state, no event.
    const again = await flood(100, 20, () => request(secondApi.url, 'POST', path, { json: body }));
    assert.deepEqual(
      [...again.byStatus.keys()].filter((s) => s !== 503),
      [200],
    );
    for (const a of again.answers.filter((x) => x.status === 200)) assert.deepEqual(a.body, { result: { status: 'SIGNING' } });
    const depositReplays = await flood(100, 20, () =>
      request(secondApi.url, 'POST', `/api/v1/executions/${wallet.id}/${executionId}/deposit`, {
        token: stack.tokens.all,
        json: dep.body.result.deposit,
      }),
    );
    assert.deepEqual(
      [...depositReplays.byStatus.keys()].filter((s) => s !== 503),
      [200],
    );
    for (const a of depositReplays.answers.filter((x) => x.status === 200)) {
      assert.equal(a.body.result.status, 'SIGNING');
      assert.deepEqual(a.body.result.deposit, dep.body.result.deposit);
    }
    assert.equal(await historyLength(workflowId), afterDeposit, 'replays after SIGNING added no history event');
  });

  it('when a refused deposit is sent again, then it is 409 each time and recorded for refund once, with no new history event', async () => {
    const wallet = newWallet();
    const executionId = `replay-${randomUUID()}`;
    await prepared(wallet, executionId);
    assert.equal((await deposit(wallet.id, executionId, { txHash: '0xfirst' })).status, 200);
    const other = await deposit(wallet.id, executionId, { txHash: '0xother' });
    assert.equal(other.status, 409, other.text);
    const workflowId = executionWorkflowId(wallet.id, executionId);
    const before = await historyLength(workflowId);
    for (let k = 0; k < 5; k++) {
      const res = await deposit(wallet.id, executionId, { txHash: '0xother' });
      assert.equal(res.status, 409, res.text);
      assert.match(res.body.error, /another txHash/);
    }
    assert.equal(await historyLength(workflowId), before);
    const read = await requestRetrying503(stack.api.url, 'GET', `/api/v1/executions/${wallet.id}/${executionId}`);
    assert.deepEqual(
      read.body.result.refusedDeposits.map((r: { txHash: string }) => r.txHash),
      ['0xother'],
    );
  });

  it('when 25 other deposits are reported and 15 more signalled to an execution that has its deposit, then its record keeps the first 10, the reports past them add no history event, and every one is a refunds ledger row', async () => {
    const wallet = newWallet();
    const executionId = `overflow-${randomUUID()}`;
    await prepared(wallet, executionId);
    assert.equal((await deposit(wallet.id, executionId, { txHash: '0xfirst' })).status, 200);
    const workflowId = executionWorkflowId(wallet.id, executionId);
    for (let i = 0; i < 10; i++) assert.equal((await deposit(wallet.id, executionId, { txHash: `0xreported${i}` })).status, 409);
    const atTheBound = await historyLength(workflowId);
    for (let i = 10; i < 25; i++) {
      const res = await deposit(wallet.id, executionId, { txHash: `0xreported${i}`, amount: String(i) });
      assert.equal(res.status, 409, res.text);
      assert.match(res.body.error, /another txHash/);
    }
    assert.equal(await historyLength(workflowId), atTheBound, 'reports past the bound never reached the workflow');
    // Signals cannot be refused: past the bound they are owed back through the projection.
    const handle = stack.client.workflow.getHandle(workflowId);
    for (let i = 0; i < 15; i++) await handle.signal('depositCompleted', { txHash: `0xsignalled${i}` });
    const database = await openDatabase({ sqliteFile: path.join(stack.tmpDir, 'read-model.sqlite') });
    try {
      const ledger = new RefundLedger(database);
      const rows = await eventually(async () => {
        const found = await ledger.ofExecution(workflowId);
        return found.length === 40 && found;
      }, 30_000);
      assert.ok(rows.every((r) => r.reason === 'other-tx'));
      assert.equal(new Set(rows.map((r) => r.txHash)).size, 40);
      assert.deepEqual(
        rows.filter((r) => r.txHash.startsWith('0xreported1') && r.txHash.length === '0xreported10'.length).map((r) => r.reportedBy),
        Array(10).fill('api'),
      );
    } finally {
      await database.close();
    }
    const read = await requestRetrying503(stack.api.url, 'GET', `/api/v1/executions/${wallet.id}/${executionId}`);
    assert.deepEqual(
      read.body.result.refusedDeposits.map((r: { txHash: string }) => r.txHash),
      Array.from({ length: 10 }, (_, i) => `0xreported${i}`),
    );
    assert.equal(read.body.result.deposit.txHash, '0xfirst');
  });
});
