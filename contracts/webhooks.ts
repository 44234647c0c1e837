import type { ExecutionRecord } from '../domain/execution-state';
import type { RefundRow } from './refunds';
import { refundHeldWebhookWorkflowId, refundPaidWebhookWorkflowId, refundWebhookWorkflowId } from './temporal';

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

/**
 * A row that was due is owed nothing any more: a chain reorganisation removed its transfer (the row
 * is `void`). If the same transfer is mined again, a new refund.due follows.
 */
export interface RefundVoidedEvent {
  type: 'refund.voided';
  /** When the row was voided (ISO-8601); equal on every retry. */
  timestamp: string;
  data: RefundRow;
}

/**
 * A row was paid back: `refunded`, with its refund transaction (`refundTxHash`; by the service also
 * `refundBlock` and `refundValue`), whether the service paid it or a person recorded it.
 */
export interface RefundPaidEvent {
  type: 'refund.paid';
  /** When it was recorded paid (ISO-8601); equal on every retry. */
  timestamp: string;
  data: RefundRow;
}

/** One delivery of one event, as the workflow asks for it; the same on every retry. */
export interface RefundHeldEvent {
  type: 'refund.held';
  /** When the sweep saw it held (ISO-8601); equal on every retry. */
  timestamp: string;
  /** The row, `held`, with its `holdReason`: a person now decides (the service pays nothing more by itself until then). */
  data: RefundRow;
}

export interface WebhookDelivery {
  /** `webhook-id`: the same on every attempt, so a receiver can drop repeats. */
  webhookId: string;
  event: StatusChangedEvent | RefundDueEvent | RefundVoidedEvent | RefundPaidEvent | RefundHeldEvent;
}

/**
 * The delivery of a refunds ledger row's state change number `event` (1: due, 2: voided, 3: due
 * again, …): its webhook-id names the row and the change, wherever and however often it is sent
 * (the first keeps the id it always had: `refund-due:<row id>`).
 */
export function refundDelivery(row: RefundRow, event = 1): WebhookDelivery {
  const webhookId = refundWebhookWorkflowId(row.id, event);
  if (event % 2 === 0) return { webhookId, event: { type: 'refund.voided', timestamp: row.voidedAt ?? row.createdAt, data: row } };
  return { webhookId, event: { type: 'refund.due', timestamp: row.createdAt, data: row } };
}

/** The refund.paid delivery of a row recorded `refunded` (webhook-id `refund-paid:<row id>`: a row is paid once). */
/** The refund.held delivery of a row held for `row.holdReason` (webhook-id `refund-held:<row id>:<reason>`: once per row and reason). */
export function refundHeldDelivery(row: RefundRow, now: Date): WebhookDelivery {
  return {
    webhookId: refundHeldWebhookWorkflowId(row.id, row.holdReason ?? 'held'),
    event: { type: 'refund.held', timestamp: now.toISOString(), data: row },
  };
}

export function refundPaidDelivery(row: RefundRow): WebhookDelivery {
  return {
    webhookId: refundPaidWebhookWorkflowId(row.id),
    event: { type: 'refund.paid', timestamp: row.settledAt ?? row.createdAt, data: row },
  };
}
