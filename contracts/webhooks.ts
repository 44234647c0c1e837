import type { ExecutionRecord } from '../domain/execution-state';
import type { RefundRow } from './refunds';

/** The body of an execution's status-change webhook. */
export interface StatusChangedEvent {
  type: 'execution.status_changed';
  /** When the status changed (ISO-8601); equal on every retry. */
  timestamp: string;
  data: ExecutionRecord;
}

/** A deposit the service did not take is owed back: one event per refunds ledger row, when the row is written. */
export interface RefundDueEvent {
  type: 'refund.due';
  /** When the row was written (ISO-8601); equal on every retry. */
  timestamp: string;
  data: RefundRow;
}

/** One delivery of one event, as the workflow asks for it; the same on every retry. */
export interface WebhookDelivery {
  /** `webhook-id`: the same on every attempt, so a receiver can drop repeats. */
  webhookId: string;
  event: StatusChangedEvent | RefundDueEvent;
}

/** The refund.due delivery of one refunds ledger row: its webhook-id is the row's, wherever and however often it is sent. */
export function refundDueDelivery(row: RefundRow): WebhookDelivery {
  return { webhookId: `refund-due:${row.id}`, event: { type: 'refund.due', timestamp: row.createdAt, data: row } };
}
