import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { strandedRuns } from '../stranded-runs';

const { TimeoutType, WorkflowTaskFailedCause } = temporal.api.enums.v1;

/** Workflow ids whose pending workflow task is at attempt ≥ 3 (as `npm run stranded` lists them), with attempt and state. */
export async function wedgedWorkflows(client: Client, workflowIds: readonly string[]): Promise<string[]> {
  return (await strandedRuns(client, workflowIds)).map((r) => `${r.workflowId} (attempt ${r.attempt}, ${r.state})`);
}

export interface TaskTroubles {
  /** WorkflowTaskTimedOut events, by timeout type (START_TO_CLOSE, SCHEDULE_TO_START). */
  timedOut: Record<string, number>;
  /** WorkflowTaskFailed events, by cause. */
  failed: Record<string, number>;
  /** Executions with at least one of those events. */
  executions: number;
}

/** Every workflow task that timed out or failed in the histories of `workflowIds`. */
export async function taskTroubles(client: Client, workflowIds: readonly string[]): Promise<TaskTroubles> {
  const out: TaskTroubles = { timedOut: {}, failed: {}, executions: 0 };
  const add = (to: Record<string, number>, key: string) => (to[key] = (to[key] ?? 0) + 1);
  await inBatches(workflowIds, async (id) => {
    const history = await client.workflow.getHandle(id).fetchHistory();
    let troubled = false;
    for (const event of history.events ?? []) {
      const timedOut = event.workflowTaskTimedOutEventAttributes;
      const failed = event.workflowTaskFailedEventAttributes;
      if (timedOut) add(out.timedOut, enumName(TimeoutType, timedOut.timeoutType, 'TIMEOUT_TYPE_'));
      if (failed) add(out.failed, enumName(WorkflowTaskFailedCause, failed.cause, 'WORKFLOW_TASK_FAILED_CAUSE_'));
      troubled ||= Boolean(timedOut || failed);
    }
    if (troubled) out.executions++;
  });
  return out;
}

function enumName(values: Record<number, string>, value: number | null | undefined, prefix: string): string {
  return (values[value ?? 0] ?? String(value)).replace(prefix, '');
}

/** Runs `fn` over `items`, 20 at a time: the frontend answers hundreds of describes quickly, not all at once. */
async function inBatches<T, R>(items: readonly T[], fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += 20) out.push(...(await Promise.all(items.slice(i, i + 20).map(fn))));
  return out;
}
