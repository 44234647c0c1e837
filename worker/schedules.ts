import { Client, ScheduleAlreadyRunning, ScheduleOverlapPolicy } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import type { WorkerConfig } from '../config/config';
import { retryUntil } from './retry-until';

/**
 * Makes sure a Temporal Schedule `scheduleId` starts `workflowType` on `taskQueue` every `every`,
 * one at a time (a run still going skips the next). Created by every worker that needs it; one that
 * exists is left alone, except that one starting its workflow on another task queue (made by an
 * older build) is pointed at `taskQueue`. Tried again every 5 s until it succeeds or `signal`
 * aborts. Answers the schedule id.
 */
export function ensureSchedule(
  connection: NativeConnection,
  config: WorkerConfig,
  schedule: { scheduleId: string; workflowType: string; every: string; taskQueue: string },
  signal: AbortSignal,
  onError: (err: Error) => void,
): Promise<string | undefined> {
  const client = new Client({ connection, namespace: config.temporal.namespace });
  const { scheduleId, workflowType, every, taskQueue } = schedule;
  return retryUntil(
    async () => {
      try {
        await client.schedule.create({
          scheduleId,
          spec: { intervals: [{ every }] },
          action: { type: 'startWorkflow', workflowType, workflowId: scheduleId, taskQueue, args: [] },
          policies: { overlap: ScheduleOverlapPolicy.SKIP },
        });
      } catch (err) {
        if (!(err instanceof ScheduleAlreadyRunning)) throw err;
        const handle = client.schedule.getHandle(scheduleId);
        const { action } = await handle.describe();
        if (action.taskQueue !== taskQueue) await handle.update((previous) => ({ ...previous, action: { ...previous.action, taskQueue } }));
      }
      return scheduleId;
    },
    { signal, onError },
  );
}
