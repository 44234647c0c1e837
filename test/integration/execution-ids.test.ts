import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { executionWorkflowId } from '../../contracts/temporal';
import {
  cancelBody,
  cancelHttp,
  eventually,
  getExecution,
  listHttp,
  newWallet,
  prepare,
  sampleIntent,
  signedBody,
  submit,
} from '../support/executions';
import { getStack, type Stack } from '../support/stack';

describe('execution ids never cross runs: an id is refused for ever once used, also after Temporal forgot its run', function () {
  this.timeout(120_000);
  let stack: Stack;
  before(async () => {
    stack = await getStack();
  });

  it("when an execution's run is gone from Temporal (as after the namespace's retention), then preparing its id again is 409 with another signer, the stored record is answered, and the old signer moves nothing", async () => {
    const wallet = newWallet();
    const executionId = `reuse-${randomUUID()}`;
    const intent = sampleIntent();
    assert.equal((await prepare(stack, wallet, { executionId, intent })).status, 201);
    assert.equal((await cancelHttp(stack.api.url, wallet.id, executionId, cancelBody(wallet, executionId))).status, 200);
    await eventually(async () => (await listHttp(stack.api.url, wallet.id)).body?.result?.[0]?.status === 'CANCELLED', 15_000);
    // What retention does to a closed run: Temporal deletes it. Only the read model remembers.
    const workflowId = executionWorkflowId(wallet.id, executionId);
    // The run has closed (at CANCELLED); the server deletes a closed run from a queued task, which
    // took about 30 s on the dev server.
    await stack.client.workflowService.deleteWorkflowExecution({
      namespace: stack.config.temporal.namespace,
      workflowExecution: { workflowId },
    });
    await eventually(async () => {
      try {
        await stack.client.workflow.getHandle(workflowId).describe();
        return false;
      } catch {
        return true;
      }
    }, 60_000);

    const other = newWallet();
    const again = await prepare(stack, wallet, { executionId, intent, signerPublicKey: other.id });
    assert.equal(again.status, 409, JSON.stringify(again.body));
    const same = await prepare(stack, wallet, { executionId, intent });
    assert.equal(same.status, 200, 'the same prepare again is answered with the stored record, as a replay');
    assert.equal(same.body.result.status, 'CANCELLED');
    const read = await getExecution(stack, wallet.id, executionId);
    assert.equal(read.body.result.status, 'CANCELLED', 'the old record, from the read model');
    const signed = await submit(stack, wallet.id, signedBody(wallet, executionId, intent));
    assert.notEqual(signed.status, 200, 'nothing can be signed on a forgotten run');
    await assert.rejects(stack.client.workflow.getHandle(workflowId).describe(), 'no new run was started');
  });
});
