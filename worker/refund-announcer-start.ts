import { Client, ScheduleAlreadyRunning, ScheduleOverlapPolicy } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import type { Config } from '../config/config';
import { REFUND_ANNOUNCER_WORKFLOW_TYPE, refundAnnouncerScheduleId } from '../contracts/temporal';
import { retryUntil } from './retry-until';

/** How often the refunds ledger's outbox is swept: a row's refund.due leaves within about this long. */
export const REFUND_SWEEP_INTERVAL = '10s';

/**
 * Makes sure the refunds ledger's refund.due webhooks go out: a Temporal Schedule
 * (`refund-announcer:<task queue>`) starts refundAnnouncerWorkflow every 10 s, one at a time (a
 * sweep still running skips the next). Created by every worker with a webhook endpoint; one that
 * exists is left alone. Tried again every 5 s until it succeeds or `signal` aborts. Answers the
 * schedule id, or undefined when no webhook endpoint is configured (nothing to announce to).
 */
export async function ensureRefundAnnouncer(
  connection: NativeConnection,
  config: Config,
  signal: AbortSignal,
  onError: (err: Error) => void,
): Promise<string | undefined> {
  if (config.webhooks.length === 0) return undefined;
  const client = new Client({ connection, namespace: config.temporal.namespace });
  const scheduleId = refundAnnouncerScheduleId(config.temporal.taskQueue);
  return retryUntil(
    async () => {
      try {
        await client.schedule.create({
          scheduleId,
          spec: { intervals: [{ every: REFUND_SWEEP_INTERVAL }] },
          action: {
            type: 'startWorkflow',
            workflowType: REFUND_ANNOUNCER_WORKFLOW_TYPE,
            workflowId: scheduleId,
            taskQueue: config.temporal.taskQueue,
            args: [],
          },
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
