import type { ExecutionRecord } from '../domain/execution-state';

/** The body of every webhook this service sends. */
export interface StatusChangedEvent {
  type: 'execution.status_changed';
  /** When the status changed (ISO-8601); equal on every retry. */
  timestamp: string;
  data: ExecutionRecord;
}

/** One delivery of one event, as the workflow asks for it; the same on every retry. */
export interface WebhookDelivery {
  /** `webhook-id`: the same on every attempt, so a receiver can drop repeats. */
  webhookId: string;
  event: StatusChangedEvent;
}
