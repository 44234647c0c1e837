import type { Client } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * What Temporal says of one workflow, in one line, for a test's failure message: its status, the
 * pending workflow task (state and attempt: an attempt over 1 means its tasks failed or timed out),
 * and every workflow task that failed or timed out in its history, with the cause. A test that
 * meets an undesigned answer on an execution says with this why the workflow could not answer.
 */
export async function workflowFacts(client: Client, workflowId: string): Promise<string> {
  try {
    const handle = client.workflow.getHandle(workflowId);
    const description = await handle.describe();
    const task = description.raw.pendingWorkflowTask;
    const history = await handle.fetchHistory();
    const taskTroubles = (history.events ?? []).flatMap((event) => {
      if (event.workflowTaskFailedEventAttributes) {
        const failed = event.workflowTaskFailedEventAttributes;
        return [`event ${event.eventId}: task failed (cause ${failed.cause}): ${failed.failure?.message ?? ''}`.slice(0, 300)];
      }
      if (event.workflowTaskTimedOutEventAttributes)
        return [`event ${event.eventId}: task timed out (${event.workflowTaskTimedOutEventAttributes.timeoutType})`];
      return [];
    });
    // The history beside the facts, where Worker.runReplayHistory or a reader can take it up.
    const saved = path.join(os.tmpdir(), `workflow-facts-${workflowId.replace(/[^A-Za-z0-9._-]/g, '_')}.json`);
    writeFileSync(saved, historyToJSON(history));
    return [
      `${workflowId}: ${description.status.name}, ${history.events?.length ?? 0} events (history in ${saved})`,
      task ? `pending workflow task state ${task.state} attempt ${task.attempt}` : 'no pending workflow task',
      ...taskTroubles,
    ].join('; ');
  } catch (err) {
    return `${workflowId}: not described (${(err as Error).message})`;
  }
}
