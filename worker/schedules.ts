import { Client, ScheduleAlreadyRunning, ScheduleOverlapPolicy } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import type { WorkerConfig } from '../config/config';
import { retryUntil } from './retry-until';

/**
 * Makes sure a Temporal Schedule `scheduleId` starts `workflowType` every `every`, one at a time (a
 * run still going skips the next). Created by every worker that needs it; one that exists is left
 * alone. Tried again every 5 s until it succeeds or `signal` aborts. Answers the schedule id.
 */
export function ensureSchedule(
  connection: NativeConnection,
  config: WorkerConfig,
  schedule: { scheduleId: string; workflowType: string; every: string },
  signal: AbortSignal,
  onError: (err: Error) => void,
): Promise<string | undefined> {
  const client = new Client({ connection, namespace: config.temporal.namespace });
  const { scheduleId, workflowType, every } = schedule;
  return retryUntil(
    async () => {
      try {
        await client.schedule.create({
          scheduleId,
          spec: { intervals: [{ every }] },
          action: { type: 'startWorkflow', workflowType, workflowId: scheduleId, taskQueue: config.temporal.taskQueue, args: [] },
          policies: { overlap: ScheduleOverlapPolicy.SKIP },
        });
      } catch (err) {
        if (!(err instanceof ScheduleAlreadyRunning)) throw err;
      }
      return scheduleId;
    },
    { signal, onError },
  );
}
