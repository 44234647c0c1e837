import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../contracts/activities';
import type { WebhookDelivery } from '../contracts/webhooks';
import type { ExecutionRecord } from '../domain/execution-state';

// Webhooks: retried by the server with exponential backoff for three days (an attempt adds no
// history event), then given up so that one dead receiver cannot hold a workflow forever.
export const { deliverWebhook } = proxyActivities<Activities>({
  startToCloseTimeout: '2m',
  scheduleToCloseTimeout: '72h',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1h' },
});

/** The delivery of one status change: its id is the same wherever and however often it is sent. */
export function statusChangedDelivery(executionWorkflowId: string, seq: number, record: ExecutionRecord): WebhookDelivery {
  return {
    webhookId: `${executionWorkflowId}:${seq}`,
    event: { type: 'execution.status_changed', timestamp: record.updatedAt, data: record },
  };
}
