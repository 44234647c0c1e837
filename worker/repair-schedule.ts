import type { NativeConnection } from '@temporalio/worker';
import type { WorkerConfig } from '../config/config';
import { WHITELIST_REPAIR_WORKFLOW_TYPE, whitelistRepairScheduleId } from '../contracts/temporal';
import { ensureSchedule } from './schedules';

/**
 * Makes sure the storage nodes' replicas are compared and repaired: a Temporal Schedule
 * (`whitelist-repair:<task queue>`) starts whitelistRepairWorkflow every WHITELIST_REPAIR_INTERVAL_S
 * seconds, one at a time, on the service's task queue (decision 0094). Created by every worker
 * with storage nodes; answers the schedule id, or undefined when the interval is 0 or there are no
 * nodes.
 */
export async function ensureWhitelistRepair(
  connection: NativeConnection,
  config: WorkerConfig,
  signal: AbortSignal,
  onError: (err: Error) => void,
): Promise<string | undefined> {
  if (config.whitelistRepairIntervalS === 0 || (config.storageNodes ?? []).length === 0) return undefined;
  return ensureSchedule(
    connection,
    config,
    {
      scheduleId: whitelistRepairScheduleId(config.temporal.taskQueue),
      workflowType: WHITELIST_REPAIR_WORKFLOW_TYPE,
      every: `${config.whitelistRepairIntervalS}s`,
      taskQueue: config.temporal.taskQueue,
    },
    signal,
    onError,
  );
}
