import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { ExecutionService } from '../../api/executions/service';
import { RefundLedger } from '../../db/refund-ledger';
import { openDatabase, type Database } from '../../db/database';
import { ExecutionStore } from '../../db/execution-store';
import { executionWorkflowId, submitSignatureUpdate } from '../../contracts/temporal';
import type { ExecutionRecord } from '../../domain/execution-state';
import { buildSigningMessage } from '../../domain/signing-message';
import { intentHash } from '../../domain/canonical';
import { toHex } from '../../domain/encoding';
import nacl from 'tweetnacl';
import {
  depositHttp,
  eventually,
  getExecution,
  listHttp,
  newWallet,
  nowSeconds,
  prepare,
  submit,
  signedBody,
  type TestWallet,
} from '../support/executions';
import { getStack, type Stack } from '../support/stack';
import { walletRecords } from '../support/records';
import { startServiceProcess, stackEnv } from '../support/service-process';
import { request } from '../support/http';
import { getExecutionQuery } from '../../contracts/temporal';
import { CATCH_UP_INTERVAL_MS } from '../../worker/read-model-catch-up';

// The API writes the record each of its Updates answers before it answers; the workflow writes no
// part of it. These are the cases where that write never happens, and the worker's catch-up must
// bring the read model level with the run (decision 0073).
describe('read model: the record a caller never wrote is caught up by the worker (real stack)', function () {
  this.timeout(120_000);
  let stack: Stack;
  let database: Database;
  let store: ExecutionStore;

  before(async () => {
    stack = await getStack();
    database = await openDatabase(stack.config.database);
    store = new ExecutionStore(database);
  });
  after(async () => {
    await database?.close();
  });

  async function deposited() {
    const wallet = newWallet();
    const intent = { action: 'swap', nonce: Math.random() };
    const prepared = await prepare(stack, wallet, { intent });
    assert.equal(prepared.status, 201, prepared.text);
    const executionId = prepared.body.result.executionId as string;
    // Written by the API before its 201: the row is there at once, nobody waits for a worker.
    assert.equal((await store.get(wallet.id, executionId))?.status, 'PREPARED');
    const deposit = await depositHttp(stack, wallet.id, executionId, { txHash: `0x${executionId.replace(/-/g, '')}` });
    assert.equal(deposit.status, 200, deposit.text);
    assert.equal((await store.get(wallet.id, executionId))?.status, 'OPERATION_PENDING', 'written by the API before its 200');
    return { wallet, executionId, intent };
  }

  /** The submit sent straight to Temporal, as an operator's or another service's client would: no API writes its answer. */
  async function signedByAnotherClient(wallet: TestWallet, executionId: string, intent: unknown) {
    const timestamp = nowSeconds();
    const signingMessage = buildSigningMessage({
      domain: 'localhost',
      executionId,
      address: wallet.id,
      intentHash: intentHash(intent),
      timestamp,
    });
    const signature = nacl.sign.detached(new TextEncoder().encode(signingMessage), wallet.secretKey);
    const handle = stack.client.workflow.getHandle(executionWorkflowId(wallet.id, executionId));
    const answer = await handle.executeUpdate(submitSignatureUpdate, {
      args: [
        {
          payload: {
            signature: toHex(signature),
            publicKey: toHex(wallet.publicKey),
            connectEnvelope: { address: wallet.id, domain: 'localhost', timestamp },
            submittedAt: new Date().toISOString(),
          },
          signingMessage,
        },
      ],
    });
    return { handle, answer };
  }

  it('when the API answers a prepare, a deposit and a submit, then the read model shows each change before the answer, and the closed run is read from it', async () => {
    const { wallet, executionId, intent } = await deposited();
    const res = await submit(stack, wallet.id, signedBody(wallet, executionId, intent));
    assert.equal(res.status, 200, res.text);
    assert.equal((await store.get(wallet.id, executionId))?.status, 'SIGNING');
    const got = await getExecution(stack, wallet.id, executionId);
    assert.equal(got.body.result.status, 'SIGNING');
  });

  it('when another client of Temporal signs (the API never hears of it), then the run closes SIGNING and the read model shows SIGNING within a catch-up pass, in the list too, beside open rows whose run Temporal never had', async () => {
    // Rows of runs Temporal does not have (written by hand, or kept past retention) cost the pass
    // nothing: each record is fetched on its own.
    for (const record of walletRecords(`nowhere-${randomUUID()}`, 3))
      await store.upsert(executionWorkflowId(record.wallet, record.executionId), record, new Date(Date.now() - 60_000));
    const { wallet, executionId, intent } = await deposited();
    const { handle, answer } = await signedByAnotherClient(wallet, executionId, intent);
    assert.equal(answer.status, 'SIGNING');
    await handle.result();
    assert.equal((await store.get(wallet.id, executionId))?.status, 'OPERATION_PENDING', 'nobody wrote the change yet');
    const caught = await eventually(async () => {
      const row = await store.get(wallet.id, executionId);
      return row?.status === 'SIGNING' ? row : undefined;
    }, 4 * CATCH_UP_INTERVAL_MS);
    assert.deepEqual(caught, await handle.result());
    const listed = await listHttp(stack.api.url, wallet.id);
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(
      listed.body.result.map((e: { executionId: string; status: string }) => [e.executionId, e.status]),
      [[executionId, 'SIGNING']],
    );
  });

  it("when an API process is killed (SIGKILL) with 40 submits in flight, then every execution the killed API reached ends in the read model with its run's own record, within four catch-up passes", async () => {
    const executions = await Promise.all(Array.from({ length: 40 }, () => deposited()));
    const api = await startServiceProcess('api-killed', 'api/main.js', 'api listening', stackEnv(stack));
    const inFlight = executions.map(({ wallet, executionId, intent }) =>
      request(api.url, 'POST', `/api/v1/executions/${wallet.id}/submit`, { json: signedBody(wallet, executionId, intent) }).catch(
        (err: Error) => err,
      ),
    );
    // Killed once the first answer is out: the others are before, inside or after their Update.
    await Promise.race(inFlight);
    api.child.kill('SIGKILL');
    await Promise.all(inFlight);
    /** The run's own record: its result once closed, else its query. */
    const runRecord = async (wallet: TestWallet, executionId: string): Promise<ExecutionRecord> => {
      const handle = stack.client.workflow.getHandle(executionWorkflowId(wallet.id, executionId));
      return (await handle.describe()).status.name === 'RUNNING' ? handle.query(getExecutionQuery) : handle.result();
    };
    const behind = async () => {
      const late: string[] = [];
      for (const { wallet, executionId } of executions) {
        const [row, run] = await Promise.all([store.get(wallet.id, executionId), runRecord(wallet, executionId)]);
        if (JSON.stringify(row) !== JSON.stringify(run)) late.push(`${executionId}: read model ${row?.status}, run ${run.status}`);
      }
      return late;
    };
    await eventually(async () => (await behind()).length === 0, 4 * CATCH_UP_INTERVAL_MS + 5_000).catch(async () =>
      assert.fail(`records still behind their run: ${(await behind()).join('; ')}`),
    );
  });

  it('when a run closed before its caller wrote the final record, then the API reads the final record from the run and writes it (an API on a read model nothing else writes)', async () => {
    const { wallet, executionId, intent } = await deposited();
    await signedByAnotherClient(wallet, executionId, intent);
    // An API of its own on an empty read model: no worker catches up into it, so what it holds
    // after the read is what its own read wrote.
    const own = await openDatabase({ sqliteFile: path.join(stack.tmpDir, `catch-up-${randomUUID()}.sqlite`) });
    try {
      const ownStore = new ExecutionStore(own);
      const service = new ExecutionService(stack.client, stack.config, ownStore, new RefundLedger(own));
      assert.equal(await ownStore.get(wallet.id, executionId), undefined);
      const record = await service.get(wallet.id, executionId);
      assert.equal(record.status, 'SIGNING');
      assert.deepEqual(await ownStore.get(wallet.id, executionId), record);
    } finally {
      await own.close();
    }
  });
});
