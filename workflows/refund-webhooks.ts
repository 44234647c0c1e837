import { log, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../contracts/activities';
import type { WebhookDelivery } from '../contracts/webhooks';
import { deliverWebhook } from './webhook-delivery';

const { announceRefunds } = proxyActivities<Activities>({
  startToCloseTimeout: '1m',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m', maximumAttempts: 5 },
});

/**
 * One scheduled sweep of the refunds ledger's outbox (schedule `refund-announcer:<task queue>`,
 * created by every worker with a webhook endpoint): hands each row not yet announced to its own
 * refundWebhookWorkflow. A sweep that fails is the next one's to redo.
 */
export async function refundAnnouncerWorkflow(): Promise<number> {
  return (await announceRefunds()).announced;
}

/**
 * The refund.due webhook of one refunds ledger row (id `refund-due:<row id>`), retried like an
 * execution's status changes (three days, then given up); it takes no signal, Update or query.
 */
export async function refundWebhookWorkflow(delivery: WebhookDelivery): Promise<boolean> {
  try {
    await deliverWebhook(delivery);
    return true;
  } catch (err) {
    log.warn('webhook given up after its retries', { webhookId: delivery.webhookId, error: (err as Error).message });
    return false;
  }
}
