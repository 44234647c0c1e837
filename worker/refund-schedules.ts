import type { NativeConnection } from '@temporalio/worker';
import type { WorkerConfig } from '../config/config';
import {
  REFUND_ANNOUNCER_WORKFLOW_TYPE,
  REFUND_SWEEP_WORKFLOW_TYPE,
  refundAnnouncerScheduleId,
  refundSweepScheduleId,
  refundsTaskQueue,
  webhooksTaskQueue,
} from '../contracts/temporal';
import { ensureSchedule } from './schedules';

/** How often the refunds ledger's outbox is swept: a row's refund.due leaves within about this long. */
export const REFUND_ANNOUNCE_INTERVAL = '10s';

/** How often the refunds ledger is swept for rows to pay: a payable row's refund workflow starts within about this long. */
export const REFUND_PAY_INTERVAL = '5s';

/**
 * Makes sure the refunds ledger's refund.due webhooks go out: a Temporal Schedule
 * (`refund-announcer:<task queue>`) starts refundAnnouncerWorkflow every 10 s, one at a time, on
 * the webhooks task queue, where the deliveries it starts run too (decision 0089).
 * Created by every worker with a webhook endpoint. Answers the schedule id, or undefined when no
 * webhook endpoint is configured (nothing to announce to).
 */
export async function ensureRefundAnnouncer(
  connection: NativeConnection,
  config: WorkerConfig,
  signal: AbortSignal,
  onError: (err: Error) => void,
): Promise<string | undefined> {
  if (config.webhooks.length === 0) return undefined;
  return ensureSchedule(
    connection,
    config,
    {
      scheduleId: refundAnnouncerScheduleId(config.temporal.taskQueue),
      workflowType: REFUND_ANNOUNCER_WORKFLOW_TYPE,
      every: REFUND_ANNOUNCE_INTERVAL,
      taskQueue: webhooksTaskQueue(config.temporal.taskQueue),
    },
    signal,
    onError,
  );
}

/**
 * Makes sure the service pays refunds: a Temporal Schedule (`refund-sweep:<task queue>`) starts
 * refundSweepWorkflow every 5 s on the refunds task queue, which starts the refund workflow of each
 * deposit address with a row to pay (decision 0081) there too, as its children (decision 0089). Created by every worker with a chain (CHAIN_RPC_URL), whatever its
 * REFUND_PAYMENTS: with payments off the sweep still watches the transactions already out.
 * Answers the schedule id, or undefined without a chain.
 */
export async function ensureRefundSweep(
  connection: NativeConnection,
  config: WorkerConfig,
  signal: AbortSignal,
  onError: (err: Error) => void,
): Promise<string | undefined> {
  if (!config.chain) return undefined;
  return ensureSchedule(
    connection,
    config,
    {
      scheduleId: refundSweepScheduleId(config.temporal.taskQueue),
      workflowType: REFUND_SWEEP_WORKFLOW_TYPE,
      every: REFUND_PAY_INTERVAL,
      taskQueue: refundsTaskQueue(config.temporal.taskQueue),
    },
    signal,
    onError,
  );
}
