import { createHash } from 'node:crypto';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { WebhookEndpoint } from '../config/config';
import type { ExecutionActivities } from '../contracts/activities';
import type { WebhookDelivery } from '../contracts/webhooks';
import { postWebhook } from './webhooks';

export interface WebhookDeliveryDeps {
  /** Read on every attempt, so an endpoint removed from the configuration stops being retried. */
  webhooks?: () => readonly WebhookEndpoint[];
  webhookTimeoutMs?: number;
}

/** The delivery of one webhook event (a status change, a refunds ledger row's change) to every configured endpoint. */
export function createWebhookDeliveryActivities(deps: WebhookDeliveryDeps): Pick<ExecutionActivities, 'deliverWebhook'> {
  return {
    /**
     * Delivers one status-change event to every configured endpoint. Endpoints that answered 2xx
     * are kept in the heartbeat details, so a retry (after one endpoint failed) sends only to the
     * others; every attempt carries the same webhook-id. Throws while any endpoint is left.
     */
    async deliverWebhook(delivery: WebhookDelivery): Promise<{ delivered: number }> {
      const context = Context.current();
      // Endpoints are kept by a digest of their URL: heartbeat details are stored by Temporal, and a
      // receiver's URL may hold a secret in its path or query.
      const done = new Set<string>((context.info.heartbeatDetails as string[] | undefined) ?? []);
      const failures: string[] = [];
      for (const endpoint of deps.webhooks?.() ?? []) {
        const key = createHash('sha256').update(endpoint.url).digest('hex').slice(0, 16);
        if (done.has(key)) continue;
        try {
          await postWebhook(endpoint, delivery, { timeoutMs: deps.webhookTimeoutMs ?? 10_000, signal: context.cancellationSignal });
          done.add(key);
          context.heartbeat([...done]);
        } catch (err) {
          failures.push((err as Error).message);
        }
      }
      if (failures.length > 0) throw ApplicationFailure.create({ type: 'WebhookUndelivered', message: failures.join('; ') });
      return { delivered: done.size };
    },
  };
}
