import { log } from '@temporalio/workflow';
import type { ExecutionWebhooksInput } from '../contracts/temporal';
import { deliverWebhook } from './webhook-delivery';

/**
 * The webhooks a finished execution could not deliver while it waited for them (its receiver slow
 * or down): sent here, in order, each retried for up to three days, so that the execution itself
 * can close. It takes no signal, Update or query, so nothing wakes it while its receiver is down.
 */
export async function executionWebhooksWorkflow({ executionWorkflowId, deliveries }: ExecutionWebhooksInput): Promise<number> {
  let delivered = 0;
  for (const delivery of deliveries) {
    try {
      await deliverWebhook(delivery);
      delivered++;
    } catch (err) {
      log.warn('webhook given up after its retries', {
        workflowId: executionWorkflowId,
        webhookId: delivery.webhookId,
        error: (err as Error).message,
      });
    }
  }
  return delivered;
}
