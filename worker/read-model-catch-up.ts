import { setTimeout as delay } from 'node:timers/promises';
import { Client, WorkflowNotFoundError } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import { callerWritesRecord, type ExecutionRecord, type ExecutionStatus } from '../domain/execution-state';
import { EXECUTION_WORKFLOW_TYPE, executionStatusKey, getExecutionQuery } from '../contracts/temporal';
import type { ExecutionStore } from '../db/execution-store';

// The read model's backstop for records their caller never wrote. The API writes the record each
// of its Updates answers before it answers its client (callerWritesRecord); an API killed between
// the Update and that write, or another client's Update (an operator's `temporal workflow update`),
// leaves the read model behind the run. Every pass compares the read model's open executions with
// Temporal's: the ExecutionState search attribute the run upserts at every status change, read from
// visibility (no workflow task, no billable action), and fetches a record only where they differ:
// a closed run's result from its history, an open run's by query. Each worker runs it on its own
// task queue; the writes are idempotent (the newer version wins), so several workers agree.

/** How often a worker compares the read model with Temporal; a record nobody wrote is in the read model about this long later. */
export const CATCH_UP_INTERVAL_MS = 5_000;
/** A row or run younger than this is not judged: its caller may be writing it right now. */
const SETTLE_MS = 5_000;
/**
 * Rows judged per pass, the least recently written first: every open execution of three workers at
 * the defaults (720, decision 0107) with room; past it, the rows beyond the 2,000 least recently
 * written are judged only once older ones close.
 */
const ROWS_PER_PASS = 2_000;
/**
 * How far back a row's last write may lie for the catch-up to judge it: the longest an open
 * execution stays open at the default TTL and signing deadline, with room. An older open row whose
 * run has closed is read from the run's result by the API's GET, or by `npm run db -- repair`.
 */
const WINDOW_MS = 24 * 3_600_000;
/** Each Temporal call of a pass: a run whose worker does not answer a query costs the pass no more. */
const CALL_MS = 5_000;

/** An open run of the task queue as visibility lists it. */
export interface RunningExecution {
  /** The ExecutionState search attribute (the run's status at its last change). */
  state?: string;
  startedAt: Date;
}

export interface CatchUpPlan {
  /** Open runs whose record the read model lacks or shows at another status: asked for their record. */
  query: string[];
  /** Rows open in the read model whose run visibility does not list as running: closed, or too new to be listed. */
  describe: string[];
}

/**
 * Which executions a pass fetches, from the read model's open rows written before the pass's
 * cutoff, the task queue's running executions, and which of those have a row at all.
 */
export function catchUpPlan(
  openRows: ReadonlyArray<{ workflowId: string; status: ExecutionStatus }>,
  running: ReadonlyMap<string, RunningExecution>,
  hasRow: (workflowId: string) => boolean,
  cutoff: Date,
): CatchUpPlan {
  const query = new Set<string>();
  const describe: string[] = [];
  for (const row of openRows) {
    const run = running.get(row.workflowId);
    if (run === undefined) describe.push(row.workflowId);
    else if (run.state !== undefined && run.state !== row.status) query.add(row.workflowId);
  }
  for (const [workflowId, run] of running) if (run.startedAt < cutoff && !hasRow(workflowId)) query.add(workflowId);
  return { query: [...query], describe };
}

export interface CatchUpDeps {
  client: Client;
  taskQueue: string;
  store: ExecutionStore;
  /** Workflow ids whose run Temporal no longer has (retention, a row written by hand): not asked again by this process. */
  gone?: Set<string>;
}

/** What one pass wrote, and the records it could not fetch (each on its own: one never stops the others). */
export interface CatchUpResult {
  wrote: number;
  failed: string[];
}

/** One pass. */
export async function catchUpOnce(deps: CatchUpDeps, now = new Date()): Promise<CatchUpResult> {
  const cutoff = new Date(now.getTime() - SETTLE_MS);
  const gone = deps.gone ?? new Set<string>();
  const openRows = (await deps.store.openWrittenBetween(new Date(now.getTime() - WINDOW_MS), cutoff, ROWS_PER_PASS)).filter(
    (r) => !gone.has(r.workflowId),
  );
  const running = new Map<string, RunningExecution>();
  const listed = deps.client.workflow.list({
    query: `TaskQueue = '${deps.taskQueue}' AND WorkflowType = '${EXECUTION_WORKFLOW_TYPE}' AND ExecutionStatus = 'Running'`,
  });
  for await (const run of listed) {
    running.set(run.workflowId, { state: run.typedSearchAttributes.get(executionStatusKey), startedAt: run.startTime });
  }
  const stored = await deps.store.withRows([...running.keys()]);
  const plan = catchUpPlan(openRows, running, (id) => stored.has(id), cutoff);

  const rowStatus = new Map(openRows.map((r) => [r.workflowId, r.status]));
  const failed: string[] = [];
  const bounded = <T>(call: () => Promise<T>) => deps.client.withDeadline(Date.now() + CALL_MS, call);
  /** The run's record, when it has one to take: undefined for a run terminated, failed or gone. */
  const fetch = async (workflowId: string, described: boolean): Promise<ExecutionRecord | undefined> => {
    const handle = deps.client.workflow.getHandle(workflowId);
    try {
      if (!described) return await bounded(() => handle.query(getExecutionQuery));
      const description = await bounded(() => handle.describe());
      if (description.status.name === 'RUNNING') {
        const state = description.typedSearchAttributes.get(executionStatusKey);
        return state !== undefined && state !== rowStatus.get(workflowId)
          ? await bounded(() => handle.query(getExecutionQuery))
          : undefined;
      }
      // Terminated, failed or timed out: no record to take; the row keeps the last one written.
      return description.status.name === 'COMPLETED' ? ((await bounded(() => handle.result())) as ExecutionRecord) : undefined;
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) gone.add(workflowId);
      else failed.push(`${workflowId}: ${(err as Error).message || (err as Error).name || String(err)}`);
      return undefined;
    }
  };
  let wrote = 0;
  for (const [ids, described] of [
    [plan.query, false],
    [plan.describe, true],
  ] as const) {
    for (const workflowId of ids) {
      const record = await fetch(workflowId, described);
      // A record that owes money back is the workflow's own write (its ledger rows with it).
      if (record && callerWritesRecord(record) && (await deps.store.upsert(workflowId, record))) wrote++;
    }
  }
  return { wrote, failed };
}

/** Runs a pass every CATCH_UP_INTERVAL_MS until `signal` aborts; a failed pass is reported and the next one tries again. */
export async function runCatchUp(
  connection: NativeConnection,
  namespace: string,
  deps: Omit<CatchUpDeps, 'client'>,
  signal: AbortSignal,
  report: { wrote: (count: number) => void; failed: (err: Error) => void },
): Promise<void> {
  const client = new Client({ connection, namespace });
  const gone = new Set<string>();
  while (!signal.aborted) {
    await delay(CATCH_UP_INTERVAL_MS, undefined, { signal }).catch(() => undefined);
    if (signal.aborted) return;
    try {
      const { wrote, failed } = await catchUpOnce({ ...deps, client, gone });
      if (wrote > 0) report.wrote(wrote);
      if (failed.length > 0) report.failed(new Error(`${failed.length} records not fetched, first ${failed[0]}`));
    } catch (err) {
      if (!signal.aborted) report.failed(err as Error);
    }
  }
}
