import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

/** A running workflow whose pending workflow task failed or timed out `attempt - 1` times in a row. */
export interface StrandedRun {
  workflowId: string;
  runId: string;
  attempt: number;
  /** SCHEDULED or STARTED. */
  state: string;
}

/** From the third attempt on: one timeout or failure is load, two in a row is a run that cannot proceed. */
export const STRANDED_ATTEMPT = 3;

/**
 * The runs among `workflowIds` whose pending workflow task is at attempt STRANDED_ATTEMPT or more.
 * Temporal's visibility cannot filter on a pending task, so each run is described, 20 at a time.
 */
export async function strandedRuns(client: Client, workflowIds: readonly string[]): Promise<StrandedRun[]> {
  const out: StrandedRun[] = [];
  for (let i = 0; i < workflowIds.length; i += 20) {
    const described = await Promise.all(workflowIds.slice(i, i + 20).map((id) => client.workflow.getHandle(id).describe()));
    for (const d of described) {
      const task = d.raw.pendingWorkflowTask;
      if (!task || (task.attempt ?? 0) < STRANDED_ATTEMPT) continue;
      const state = temporal.api.enums.v1.PendingWorkflowTaskState[task.state ?? 0] ?? String(task.state);
      out.push({
        workflowId: d.workflowId,
        runId: d.runId,
        attempt: task.attempt ?? 0,
        state: state.replace('PENDING_WORKFLOW_TASK_STATE_', ''),
      });
    }
  }
  return out;
}

/** The ids of every running workflow a visibility query selects (default: all running ones). */
export async function runningWorkflowIds(client: Client, query = 'ExecutionStatus="Running"'): Promise<string[]> {
  const ids: string[] = [];
  for await (const w of client.workflow.list({ query })) ids.push(w.workflowId);
  return ids;
}
