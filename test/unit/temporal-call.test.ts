import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { Client, Connection, WorkflowUpdateFailedError } from '@temporalio/client';
import { settleAbandoned, withinMs } from '../../api/temporal/call';
import {
  isNoWorkerPolling,
  isUnknownOutcome,
  isUpdateNotProcessed,
  isWorkflowTaskRetrying,
  mapTemporalError,
} from '../../api/temporal/errors';
import { ApplicationFailure } from '@temporalio/common';

describe('api/temporal-call withinMs', () => {
  let connection: Connection;
  let client: Client;
  let blackHole: Server;

  before(async () => {
    // A TCP port that accepts and never speaks HTTP/2: a gRPC call to it hangs until cancelled.
    blackHole = createServer(() => undefined);
    await new Promise<void>((resolve) => blackHole.listen(0, '127.0.0.1', resolve));
    const port = (blackHole.address() as { port: number }).port;
    connection = Connection.lazy({ address: `127.0.0.1:${port}` });
    client = new Client({ connection });
  });
  after(async () => {
    await connection.close();
    blackHole.close();
  });

  it('when the call never settles (as a retry the abort signal cannot reach), then it rejects with a TimeoutError, an unknown outcome', async () => {
    const err = await withinMs(client, 50, () => new Promise<never>(() => undefined)).then(
      () => assert.fail('resolved'),
      (e: unknown) => e,
    );
    assert.equal((err as Error).name, 'TimeoutError');
    assert.ok(isUnknownOutcome(err));
  });

  it('when the call settles first, then its value or its error passes through unchanged', async () => {
    assert.equal(await withinMs(client, 1000, async () => 42), 42);
    const boom = new Error('boom');
    await assert.rejects(
      withinMs(client, 1000, async () => Promise.reject(boom)),
      (e) => e === boom,
    );
  });

  it('when a real Temporal call hangs on a server that never answers, then it rejects in bounded time as an unknown outcome', async () => {
    const err = await withinMs(client, 200, () => client.workflowService.getSystemInfo({})).then(
      () => assert.fail('resolved'),
      (e: unknown) => e,
    );
    assert.ok(isUnknownOutcome(err), String(err));
  });

  it('when a call was given up on, then settleAbandoned waits until it has ended (so the connection can close under nothing)', async () => {
    // A connection of its own: the first test left a call on the shared one that never ends, and
    // settleAbandoned waits for every call given up on over a connection, whichever client made it.
    const ownConnection = Connection.lazy({ address: `127.0.0.1:${(blackHole.address() as { port: number }).port}` });
    const own = new Client({ connection: ownConnection });
    let finish!: () => void;
    let ended = false;
    const slow = new Promise<void>((resolve) => (finish = resolve)).then(() => {
      ended = true;
    });
    await assert.rejects(
      withinMs(own, 20, () => slow),
      (e: Error) => e.name === 'TimeoutError',
    );
    const settled = settleAbandoned(own).then(() => ended);
    setTimeout(finish, 50);
    assert.equal(await settled, true, 'settleAbandoned resolved only after the call ended');
    assert.equal(await settleAbandoned(own).then(() => 'nothing left'), 'nothing left');
    await ownConnection.close();
  });

  it('when a call was given up on through one client, then settleAbandoned of another client on the same connection waits for it too', async () => {
    const ownConnection = Connection.lazy({ address: `127.0.0.1:${(blackHole.address() as { port: number }).port}` });
    const first = new Client({ connection: ownConnection });
    const second = new Client({ connection: ownConnection });
    let finish!: () => void;
    let ended = false;
    const slow = new Promise<void>((resolve) => (finish = resolve)).then(() => {
      ended = true;
    });
    await assert.rejects(
      withinMs(first, 20, () => slow),
      (e: Error) => e.name === 'TimeoutError',
    );
    const settled = settleAbandoned(second).then(() => ended);
    setTimeout(finish, 50);
    assert.equal(await settled, true, 'the connection closes only after the call ended');
    await ownConnection.close();
  });
});

describe('api/temporal-errors mapTemporalError', () => {
  const grpcError = (code: number, details: string): Error =>
    Object.assign(new Error(`${code} ${details}`), { code, details, metadata: {} });

  it('when Temporal refuses an Update or query because the workflow task is being retried, then the answer is 503 with Retry-After, not a 500', () => {
    // What the server answers while a workflow's task has timed out or failed and waits for its retry.
    const refused = new WorkflowUpdateFailedError(
      'Workflow Update failed',
      grpcError(9, 'Unable to perform workflow execution update due to Workflow Task in failed state.'),
    );
    // And while an Update was in flight, when the task that carried it failed (a worker recreated under load).
    const dropped = new WorkflowUpdateFailedError(
      'Workflow Update failed',
      grpcError(9, 'Unable to perform workflow execution update due to unexpected workflow task failure.'),
    );
    for (const err of [refused, dropped, grpcError(9, 'Unable to query workflow due to Workflow Task in failed state.')]) {
      assert.ok(isWorkflowTaskRetrying(err));
      const mapped = mapTemporalError(err, 'execution');
      assert.equal(mapped.status, 503);
      assert.ok((mapped.retryAfterS ?? 0) > 0, 'a Retry-After');
    }
  });

  it('when no worker polls the task queue (all down or restarting), then a query is 503 with Retry-After, not a 500', () => {
    // What the dev server answered a query while the only worker recreated itself.
    const err = new Error('Failed to query Workflow', {
      cause: grpcError(9, 'no poller seen for task queue recently, worker may be down'),
    });
    assert.ok(isNoWorkerPolling(err));
    const mapped = mapTemporalError(err, 'execution');
    assert.equal(mapped.status, 503);
    assert.ok((mapped.retryAfterS ?? 0) > 0, 'a Retry-After');
  });

  it('when the server rejects an Update no worker processed (a worker recreated under it), then it is 503 with Retry-After: nothing changed, the same request may be sent again', () => {
    // As the server sends it (its unprocessedUpdateFailure): an ApplicationFailure of type UnprocessedUpdate.
    const err = new WorkflowUpdateFailedError(
      'Workflow Update failed',
      ApplicationFailure.create({
        type: 'UnprocessedUpdate',
        nonRetryable: true,
        message:
          "Workflow Update is rejected because it wasn't processed by worker. Probably, Workflow Update is not supported by the worker.",
      }),
    );
    assert.equal(isUpdateNotProcessed(err), true);
    const mapped = mapTemporalError(err, 'execution e');
    assert.equal(mapped.status, 503);
    assert.ok((mapped.retryAfterS ?? 0) >= 1);
    // An Update the workflow itself refused (an ApplicationFailure with a type) is not this.
    const refused = new WorkflowUpdateFailedError(
      'Workflow Update failed',
      ApplicationFailure.create({ type: 'DepositRefused', message: 'no' }),
    );
    assert.equal(isUpdateNotProcessed(refused), false);
  });

  it('when FAILED_PRECONDITION says anything else, then it stays an internal error (500) whose details go only to the log', () => {
    const mapped = mapTemporalError(grpcError(9, 'Namespace is not active'), 'execution');
    assert.equal(isWorkflowTaskRetrying(grpcError(9, 'Namespace is not active')), false);
    assert.equal(mapped.status, 500);
  });
});
