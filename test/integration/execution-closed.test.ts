import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { executionWorkflowId } from '../../contracts/temporal';
import { RefundLedger } from '../../db/refund-ledger';
import {
  cancelBody,
  cancelHttp,
  depositHttp,
  eventually,
  getExecution,
  newWallet,
  prepare,
  sampleIntent,
  signedBody,
  submit,
  type TestWallet,
} from '../support/executions';
import { getStack, type Stack } from '../support/stack';

// An execution's workflow closes at its final status (EXECUTION_LINGER_S is 0 by default). What a
// client sends afterwards is answered as the open workflow answered it: from the read model, and a
// deposit it cannot take is owed back in the refunds ledger, once per transfer.
describe('executions: a closed execution answers as an open one did', function () {
  this.timeout(60_000);
  let stack: Stack;
  let ledger: RefundLedger;
  before(async () => {
    stack = await getStack();
    ledger = new RefundLedger(stack.worker.database);
  });

  /** An execution taken to SIGNING through the API, and its workflow once it has closed. */
  async function signedAndClosed(): Promise<{
    wallet: TestWallet;
    executionId: string;
    intent: unknown;
    body: ReturnType<typeof signedBody>;
  }> {
    const wallet = newWallet();
    const executionId = `closed-${randomUUID()}`;
    const intent = sampleIntent();
    assert.equal((await prepare(stack, wallet, { executionId, intent })).status, 201);
    assert.equal((await depositHttp(stack, wallet.id, executionId, { txHash: '0xaa01' })).status, 200);
    const body = signedBody(wallet, executionId, intent);
    const res = await submit(stack, wallet.id, body);
    assert.deepEqual([res.status, res.body?.result], [200, { status: 'SIGNING' }]);
    const handle = stack.client.workflow.getHandle(executionWorkflowId(wallet.id, executionId));
    assert.equal((await handle.result()).status, 'SIGNING');
    return { wallet, executionId, intent, body };
  }

  it('when an execution reaches SIGNING, then its workflow completes, and GET, the same submit again and the same deposit again answer 200 as before', async () => {
    const { wallet, executionId, body } = await signedAndClosed();
    const read = await getExecution(stack, wallet.id, executionId);
    assert.equal(read.status, 200, read.text);
    assert.equal(read.body.result.status, 'SIGNING');
    assert.equal(read.body.result.signedPayload.signature, body.signature);
    const again = await submit(stack, wallet.id, body);
    assert.deepEqual([again.status, again.body?.result], [200, { status: 'SIGNING' }]);
    const deposit = await depositHttp(stack, wallet.id, executionId, { txHash: '0xaa01' });
    assert.equal(deposit.status, 200, deposit.text);
    assert.equal(deposit.body.result.deposit.txHash, '0xaa01');
    assert.deepEqual(await ledger.ofExecution(executionWorkflowId(wallet.id, executionId)), [], 'its own deposit is owed to nobody');
  });

  it('when a closed execution gets another signature, a cancel or another deposit, then each is the 409 the open workflow gave, and the deposit is one refund row however often it is reported', async () => {
    const { wallet, executionId, intent } = await signedAndClosed();
    const other = await submit(stack, wallet.id, signedBody(wallet, executionId, intent, { timestamp: Math.floor(Date.now() / 1000) - 7 }));
    assert.deepEqual([other.status, other.body?.error], [409, 'execution already holds a different signature'], other.text);
    const cancel = await cancelHttp(stack.api.url, wallet.id, executionId, cancelBody(wallet, executionId));
    assert.deepEqual([cancel.status, cancel.body?.error], [409, 'execution is SIGNING and can no longer be cancelled'], cancel.text);
    for (let i = 0; i < 3; i++) {
      const late = await depositHttp(stack, wallet.id, executionId, { txHash: '0xbb02', amount: '5' });
      assert.equal(late.status, 409, late.text);
      assert.equal(late.body.error, 'execution already has a deposit with another txHash; this one was recorded for refund');
    }
    const rows = await ledger.ofExecution(executionWorkflowId(wallet.id, executionId));
    assert.deepEqual(
      rows.map((r) => [r.txHash, r.amount, r.reason, r.reportedBy, r.state, r.executionId, r.wallet]),
      [['0xbb02', '5', 'other-tx', 'api', 'due', executionId, wallet.id]],
    );
  });

  it('when an execution expires, then its workflow completes, a submit is 409 EXPIRED, and a deposit is owed back as expired', async () => {
    const wallet = newWallet();
    const executionId = `closed-${randomUUID()}`;
    const intent = sampleIntent();
    assert.equal((await prepare(stack, wallet, { executionId, intent, ttlSeconds: 1 })).status, 201);
    const handle = stack.client.workflow.getHandle(executionWorkflowId(wallet.id, executionId));
    assert.equal((await handle.result()).status, 'EXPIRED');
    const signed = await submit(stack, wallet.id, signedBody(wallet, executionId, intent));
    assert.deepEqual([signed.status, signed.body?.error], [409, 'execution is EXPIRED'], signed.text);
    const late = await depositHttp(stack, wallet.id, executionId, { txHash: '0xcc03' });
    assert.deepEqual([late.status, late.body?.error], [409, 'execution is EXPIRED; the deposit was recorded for refund'], late.text);
    const rows = await ledger.ofExecution(executionWorkflowId(wallet.id, executionId));
    assert.deepEqual(
      rows.map((r) => [r.txHash, r.reason]),
      [['0xcc03', 'expired']],
    );
    await eventually(async () => (await getExecution(stack, wallet.id, executionId)).body?.result?.status === 'EXPIRED');
  });
});
