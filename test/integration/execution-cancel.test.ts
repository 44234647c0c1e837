import assert from 'node:assert/strict';
import { RefundLedger } from '../../db/refund-ledger';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { temporal } from '@temporalio/proto';
import { executionWorkflowId } from '../../contracts/temporal';
import {
  cancelBody,
  cancelHttp,
  depositHttp,
  settledEventTypes,
  eventually,
  getExecution,
  newWallet,
  nowSeconds,
  prepare,
  sampleIntent,
  signedBody,
  submit,
} from '../support/executions';
import { getStack, type Stack } from '../support/stack';
import { childEnv } from '../../config/child-env';

const run = promisify(execFile);

async function eventTypes(stack: Stack, workflowId: string): Promise<string[]> {
  const history = await stack.client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).map((e) => String(temporal.api.enums.v1.EventType[e.eventType ?? 0]));
}

describe('integration: POST /api/v1/executions/{wallet}/{executionId}/cancel (signed by the wallet)', function () {
  this.timeout(60_000);
  let stack: Stack;
  before(async () => {
    stack = await getStack();
  });

  async function prepared(body: Record<string, unknown> = {}) {
    const wallet = newWallet();
    const executionId = `cancel-${randomUUID()}`;
    const intent = sampleIntent();
    const res = await prepare(stack, wallet, { executionId, intent, ...body });
    assert.equal(res.status, 201, res.text);
    return { wallet, executionId, intent, workflowId: executionWorkflowId(wallet.id, executionId) };
  }

  it('when a PREPARED execution is cancelled, then 200 CANCELLED; again is 200 with no history event written; then submit is 409 and a deposit is 409 and kept for refund', async () => {
    const { wallet, executionId, intent, workflowId } = await prepared();
    const res = await cancelHttp(stack.api.url, wallet.id, executionId, cancelBody(wallet, executionId));
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.result.status, 'CANCELLED');
    assert.deepEqual(
      res.body.result.history.map((h: { status: string }) => h.status),
      ['PREPARED', 'CANCELLED'],
    );

    const before = await settledEventTypes(stack, workflowId);
    const again = await cancelHttp(stack.api.url, wallet.id, executionId, cancelBody(wallet, executionId, { timestamp: nowSeconds() - 3 }));
    assert.equal(again.status, 200, again.text);
    assert.equal(again.body.result.status, 'CANCELLED');
    assert.deepEqual(await eventTypes(stack, workflowId), before, 'a cancel of a CANCELLED execution writes nothing');

    const sub = await submit(stack, wallet.id, signedBody(wallet, executionId, intent));
    assert.equal(sub.status, 409, sub.text);
    const dep = await depositHttp(stack, wallet.id, executionId, { txHash: '0xafter-cancel' });
    assert.equal(dep.status, 409, dep.text);
    // The run has closed (settled above): the deposit is owed back in the refunds ledger.
    const rows = await new RefundLedger(stack.worker.database).ofExecution(workflowId);
    assert.deepEqual(
      rows.map((r) => [r.txHash, r.reason]),
      [['0xafter-cancel', 'cancelled']],
    );

    // The search attribute follows (visibility is eventually consistent).
    await eventually(async () => {
      const found = [];
      for await (const w of stack.client.workflow.list({ query: `WorkflowId='${workflowId}' AND ExecutionState='CANCELLED'` }))
        found.push(w.workflowId);
      return found.length === 1;
    }, 15_000);
  });

  it('when an OPERATION_PENDING execution is cancelled, then it is CANCELLED and its deposit is marked refundDue', async () => {
    const { wallet, executionId } = await prepared();
    assert.equal((await depositHttp(stack, wallet.id, executionId, { txHash: '0xdep', amount: '5' })).status, 200);
    const res = await cancelHttp(stack.api.url, wallet.id, executionId, cancelBody(wallet, executionId));
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.result.status, 'CANCELLED');
    assert.deepEqual(res.body.result.deposit, { txHash: '0xdep', amount: '5', refundDue: true });
  });

  it('when the execution is SIGNING or EXPIRED, then a cancel is 409', async () => {
    const signing = await prepared();
    await depositHttp(stack, signing.wallet.id, signing.executionId, { txHash: '0xs' });
    assert.equal(
      (await submit(stack, signing.wallet.id, signedBody(signing.wallet, signing.executionId, signing.intent))).body.result.status,
      'SIGNING',
    );
    const r1 = await cancelHttp(stack.api.url, signing.wallet.id, signing.executionId, cancelBody(signing.wallet, signing.executionId));
    assert.equal(r1.status, 409, r1.text);
    assert.match(r1.body.error, /SIGNING/);

    const expiring = await prepared({ ttlSeconds: 1 });
    await eventually(
      async () => (await getExecution(stack, expiring.wallet.id, expiring.executionId)).body?.result?.status === 'EXPIRED',
      15_000,
    );
    const r2 = await cancelHttp(stack.api.url, expiring.wallet.id, expiring.executionId, cancelBody(expiring.wallet, expiring.executionId));
    assert.equal(r2.status, 409, r2.text);
    assert.match(r2.body.error, /EXPIRED/);
  });

  it('when the signer is wrong, the signature is for another execution, the envelope is stale or names another wallet, or the body is off-schema, then 400 and the execution stays PREPARED', async () => {
    const { wallet, executionId } = await prepared();
    const intruder = newWallet();
    const cases: Array<[string, unknown]> = [
      ['wrong signer', { ...cancelBody(wallet, executionId, { secretKey: intruder.secretKey }) }],
      ['signature for another execution', { ...cancelBody(wallet, executionId), signature: cancelBody(wallet, 'other-id').signature }],
      ['stale envelope', cancelBody(wallet, executionId, { timestamp: nowSeconds() - 3600 })],
      ['domain not allowed', cancelBody(wallet, executionId, { domain: 'evil.example' })],
      ['unknown field', { ...cancelBody(wallet, executionId), executionId }],
      [
        'missing signature',
        { publicKey: cancelBody(wallet, executionId).publicKey, connectEnvelope: cancelBody(wallet, executionId).connectEnvelope },
      ],
    ];
    for (const [name, body] of cases) {
      const res = await cancelHttp(stack.api.url, wallet.id, executionId, body);
      assert.equal(res.status, 400, `${name}: ${res.text}`);
      assert.equal(typeof res.body.error, 'string');
    }
    // The wallet of another execution signing with its own key, on its own path, is still not this execution's signer.
    const other = await cancelHttp(stack.api.url, intruder.id, executionId, cancelBody(intruder, executionId));
    assert.equal(other.status, 404, other.text);
    assert.equal((await getExecution(stack, wallet.id, executionId)).body.result.status, 'PREPARED');
  });

  it('when the execution does not exist, then 404', async () => {
    const wallet = newWallet();
    const res = await cancelHttp(stack.api.url, wallet.id, 'no-such-execution', cancelBody(wallet, 'no-such-execution'));
    assert.equal(res.status, 404, res.text);
  });

  it('when an operator cancels with the temporal CLI (Update cancelExecution), then the execution is CANCELLED', async () => {
    const { wallet, executionId, workflowId } = await prepared();
    const { stdout } = await run(
      stack.temporalBinary,
      [
        'workflow',
        'update',
        'execute',
        '--address',
        stack.temporal.address,
        '--namespace',
        stack.config.temporal.namespace,
        '--workflow-id',
        workflowId,
        '--name',
        'cancelExecution',
        '--input',
        '{"requestedBy":"operator"}',
        '--output',
        'json',
      ],
      { env: childEnv({ TEMPORAL_VERSION_CHECK_DISABLED: '1' }) },
    );
    assert.match(stdout, /CANCELLED/);
    assert.equal((await getExecution(stack, wallet.id, executionId)).body.result.status, 'CANCELLED');
  });
});
