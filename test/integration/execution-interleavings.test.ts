import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import fc from 'fast-check';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { temporal } from '@temporalio/proto';
import { WorkflowNotFoundError } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import {
  applyCancel,
  applyDeposit,
  applySubmit,
  callerWritesRecord,
  checkCancel,
  checkSubmit,
  initialRecord,
  recordVersion,
} from '../../domain/execution-state';
import type { ExecutionRecord } from '../../domain/execution-state';
import {
  EXECUTION_WORKFLOW_TYPE,
  cancelExecutionUpdate,
  depositCompletedSignal,
  getExecutionQuery,
  recordDepositUpdate,
  submitSignatureUpdate,
  ExecutionFailure,
  type ExecutionWorkflowInput,
  type SubmitSignatureArgs,
} from '../../contracts/temporal';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { testSettings } from '../support/settings';
import { getStack, type Stack } from '../support/stack';
import { executionInput, submitArgs as signedArgs } from '../support/execution-inputs';

type Op =
  | { kind: 'deposit-update'; tx: number; pauseMs: number }
  | { kind: 'deposit-signal'; tx: number; pauseMs: number }
  | { kind: 'submit'; signature: number; pauseMs: number }
  | { kind: 'cancel'; pauseMs: number };

const pause = fc.integer({ min: 0, max: 40 });
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('deposit-update' as const), tx: fc.integer({ min: 1, max: 2 }), pauseMs: pause }),
  fc.record({ kind: fc.constant('deposit-signal' as const), tx: fc.integer({ min: 1, max: 2 }), pauseMs: pause }),
  fc.record({ kind: fc.constant('submit' as const), signature: fc.integer({ min: 1, max: 2 }), pauseMs: pause }),
  fc.record({ kind: fc.constant('cancel' as const), pauseMs: pause }),
);

const txHash = (n: number) => `0x${n}`;
const submitArgs = (n: number): SubmitSignatureArgs => signedArgs(`0x${String(n).repeat(128)}`);

/** What the pure state machine says the ops do, in order (timestamps aside). */
function expected(input: ExecutionWorkflowInput, ops: Op[]): ExecutionRecord {
  let record = initialRecord(input);
  const at = input.createdAt;
  for (const o of ops) {
    if (o.kind === 'deposit-update' || o.kind === 'deposit-signal') record = applyDeposit(record, { txHash: txHash(o.tx) }, at).record;
    else if (o.kind === 'submit') {
      const args = submitArgs(o.signature);
      if (checkSubmit(record, args.payload.signature) === 'ok') record = applySubmit(record, args.payload, args.signingMessage, at);
    } else if (checkCancel(record) === 'ok') record = applyCancel(record, at);
  }
  return record;
}

/** A history that failed, written where a reader can replay it (`Worker.runReplayHistory`). */
async function keep(workflowId: string, history: temporal.api.history.v1.IHistory): Promise<string> {
  const file = path.join(os.tmpdir(), `nondeterminism-${workflowId}.json`);
  await writeFile(file, historyToJSON(history));
  return file;
}

const shape = (r: ExecutionRecord) => ({
  status: r.status,
  history: r.history.map((h) => h.status),
  deposit: r.deposit?.txHash,
  signature: r.signedPayload?.signature,
  refused: r.refusedDeposits?.map((d) => d.txHash) ?? [],
});

// A worker that evicts a run from its cache (cache full, restart, another worker) replays the run's
// whole history. If the commands of a workflow task depended on how promise continuations happened
// to interleave in the cached run, the replay disagrees with the history and every later task of
// that run fails (nondeterminism): the execution answers nothing until someone resets it. Random
// orders of signals and Updates, with random pauses and activity latencies so that projections
// finish before, between or after them, run on a worker without a cache (every task replays the
// run's history first); each history is then replayed once more from scratch, and must replay, and
// the record must be the one the pure state machine computes.
describe('executionWorkflow replays every interleaving (dev server, each history replayed after the run)', function () {
  this.timeout(300_000);
  let stack: Stack;
  let connection: NativeConnection;
  let worker: Worker;
  let running: Promise<void>;
  const taskQueue = `wf-exec-interleavings-${randomUUID()}`;
  let projectDelayMs = 0;
  /** Per workflow: the highest record version the read model was given. */
  const projected = new Map<string, number>();
  const unprojectedWebhooks: string[] = [];

  before(async () => {
    stack = await getStack();
    connection = await NativeConnection.connect({ address: stack.temporal.address });
    // No cache: every workflow task of every run replays its whole history first, so each task is
    // checked against the commands the run already issued (a stronger check than evicting some runs
    // from a small cache). A full cache is the Temporal core's own wedge path (decision 0075), which
    // test/load/stress.test.ts drives on purpose; this test is about the workflow's determinism.
    worker = await Worker.create({
      connection,
      maxCachedWorkflows: 0,
      maxConcurrentWorkflowTaskExecutions: 2,
      taskQueue,
      workflowsPath: require.resolve('../../workflows'),
      activities: {
        async projectExecution({ workflowId, record }: { workflowId: string; record: ExecutionRecord }) {
          await delay(projectDelayMs);
          projected.set(workflowId, Math.max(projected.get(workflowId) ?? 0, recordVersion(record)));
        },
        async deliverWebhook({ webhookId, event }: { webhookId: string; event: { data: ExecutionRecord } }) {
          const workflowId = webhookId.slice(0, webhookId.lastIndexOf(':'));
          // A status's webhook leaves only once the read model holds that status.
          if ((projected.get(workflowId) ?? 0) < recordVersion(event.data))
            unprojectedWebhooks.push(`${workflowId}: ${event.data.status} before its projection`);
          await delay(projectDelayMs);
        },
      },
    });
    running = worker.run();
  });
  after(async () => {
    worker?.shutdown();
    await running;
    await connection?.close();
  });

  it('when deposits (Update or signal), submits and cancels come in any order with any timing, on a worker that replays every workflow task from its history (no cache), then each history replays and the record is the state machine’s', async () => {
    const runs = new Map<string, string>();
    /** One execution driven through `ops`, checked against the state machine. */
    const drive = async (ops: Op[], webhooks: boolean, context: string): Promise<void> => {
      // lingerSeconds 0, as deployed: the run closes at its final status, and an op sent after that
      // is answered "not found" (the API then answers from the read model); it never reached the run.
      const { workflowId, input } = executionInput(Date.now(), { ttlMs: 3_600_000, lingerSeconds: 0, webhooks });
      const where = `${workflowId} after ${JSON.stringify(ops)} (${context}, webhooks ${webhooks})`;
      runs.set(workflowId, where);
      const failedTasks = async () => {
        const history = await stack.client.workflow.getHandle(workflowId).fetchHistory();
        const failed = (history.events ?? [])
          // A signal that arrives while the run completes fails that completion as UNHANDLED_COMMAND and
          // is taken by the next task: the server's designed answer, not a failure of the workflow.
          .filter(
            (e) =>
              (e.workflowTaskFailedEventAttributes &&
                e.workflowTaskFailedEventAttributes.cause !==
                  temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND) ||
              e.workflowTaskTimedOutEventAttributes,
          )
          .map(
            (e) => `${temporal.api.enums.v1.EventType[e.eventType ?? 0]}: ${e.workflowTaskFailedEventAttributes?.failure?.message ?? ''}`,
          );
        if (failed.length > 0) failed.push(`history saved to ${await keep(workflowId, history)}`);
        return failed;
      };
      // A workflow whose tasks fail answers no Update or query: bound each wait and say why.
      // Every call to Temporal is bounded, the start and the signals too: a call the client keeps
      // retrying would otherwise end as the test's timeout, without saying which or why.
      const answered = async <T>(call: Promise<T>): Promise<T> => {
        const late = Symbol('late');
        const result = await Promise.race([call, delay(15_000).then(() => late)]);
        if (result === late) assert.fail(`no answer within 15 s; failed workflow tasks: ${JSON.stringify(await failedTasks())}; ${where}`);
        return result as T;
      };
      const handle = await answered(stack.client.workflow.start(EXECUTION_WORKFLOW_TYPE, { workflowId, taskQueue, args: [input] }));
      // This test is the caller the API is: it writes the records its Updates answer (the first one
      // too, as a prepare does) unless the workflow writes them (callerWritesRecord).
      const callerWrites = (record: ExecutionRecord | void | undefined) => {
        if (record && callerWritesRecord(record))
          projected.set(workflowId, Math.max(projected.get(workflowId) ?? 0, recordVersion(record)));
      };
      callerWrites(initialRecord(input));
      /** The ops the run took in: all but those sent after it had closed. */
      const reached: Op[] = [];
      for (const o of ops) {
        await delay(o.pauseMs);
        // A refused Update is an answer of the run; "not found" means it had closed before the op.
        let closed = false;
        const refused = (err: unknown) => {
          closed = err instanceof WorkflowNotFoundError;
          // A duplicate's answer is the record as it stands: the API writes it as well.
          const failure = err instanceof WorkflowUpdateFailedError ? err.cause : undefined;
          if (failure instanceof ApplicationFailure && failure.type === ExecutionFailure.duplicate) {
            const detail = failure.details?.[0] as ExecutionRecord | { record?: ExecutionRecord };
            callerWrites('history' in detail ? detail : detail.record);
          }
        };
        if (o.kind === 'deposit-update')
          callerWrites(await answered(handle.executeUpdate(recordDepositUpdate, { args: [{ txHash: txHash(o.tx) }] }).catch(refused)));
        else if (o.kind === 'deposit-signal')
          await answered(handle.signal(depositCompletedSignal, { txHash: txHash(o.tx) }).catch(refused));
        else if (o.kind === 'submit')
          callerWrites(
            (await answered(handle.executeUpdate(submitSignatureUpdate, { args: [submitArgs(o.signature)] }).catch(refused)))?.record,
          );
        else callerWrites(await answered(handle.executeUpdate(cancelExecutionUpdate, { args: [{ requestedBy: 'test' }] }).catch(refused)));
        if (!closed) reached.push(o);
      }
      const want = shape(expected(input, reached));
      const open = (await answered(handle.describe())).status.name === 'RUNNING';
      const record = open ? await answered(handle.query(getExecutionQuery)) : await answered(handle.result());
      assert.deepEqual(shape(record), want, where);
      if (['SIGNING', 'CANCELLED'].includes(record.status)) {
        // The workflow closes at its final status, after its own writes; with its caller's, the read model holds the final record.
        const result = await answered(handle.result());
        assert.deepEqual(shape(result), want, where);
        assert.equal(projected.get(workflowId), recordVersion(result), `the read model holds the final record; ${where}`);
      }
      assert.deepEqual(await failedTasks(), [], where);
    };
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ ops: fc.array(op, { minLength: 1, maxLength: 6 }), webhooks: fc.boolean() }), { minLength: 6, maxLength: 6 }),
        fc.integer({ min: 0, max: 30 }),
        async (executions, latency) => {
          projectDelayMs = latency;
          await Promise.all(executions.map((e) => drive(e.ops, e.webhooks, `activity latency ${latency} ms`)));
        },
      ),
      // No shrinking: a failing run can wait 15 s per call, and shrinking re-runs it until the
      // test's timeout hides the failure; the first counterexample and its seed are reported as is.
      { numRuns: testSettings().INTERLEAVINGS_RUNS ?? 5, endOnFailure: true },
    );
    const failures: string[] = [];
    const histories = (async function* () {
      for (const workflowId of runs.keys()) yield { workflowId, history: await stack.client.workflow.getHandle(workflowId).fetchHistory() };
    })();
    for await (const replay of Worker.runReplayHistories({ workflowsPath: require.resolve('../../workflows') }, histories)) {
      if (replay.error) {
        const history = await stack.client.workflow.getHandle(replay.workflowId).fetchHistory();
        failures.push(
          `${runs.get(replay.workflowId)}: ${replay.error.message}; history saved to ${await keep(replay.workflowId, history)}`,
        );
      }
    }
    assert.deepEqual(failures, []);
    assert.deepEqual(unprojectedWebhooks, []);
  });
});
