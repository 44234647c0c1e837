import { FINAL_STATUSES as SERVICE_FINAL_STATUSES } from '../../domain/execution-state.js';
import { OPEN_REFUND_STATES as SERVICE_OPEN_REFUND_STATES } from '../../domain/refund-states.js';
import type { components } from './openapi.js';

// Every shape here is the service's OpenAPI document's (./openapi.ts, generated from it).

type Schemas = components['schemas'];

export type ExecutionRecord = Schemas['ExecutionRecord'];
export type ExecutionStatus = ExecutionRecord['status'];
/** One of an execution's refunds ledger rows as its depositor sees it (the record's `refunds.rows`, `watch`'s refund events). */
export type ExecutionRefund = Schemas['ExecutionRefund'];
export type PrepareRequest = Schemas['PrepareRequest'];
export type DepositRequest = Schemas['DepositRequest'];
/** The document lists the server's allowed domains as an enum; a client names any. */
type WithAnyDomain<T extends { connectEnvelope: object }> = Omit<T, 'connectEnvelope'> & {
  connectEnvelope: Omit<T['connectEnvelope'], 'domain'> & { domain: string };
};
export type SubmitRequest = WithAnyDomain<Schemas['SubmitRequest']>;
export type CancelRequest = WithAnyDomain<Schemas['CancelRequest']>;
export type RefundAddressRequest = WithAnyDomain<Schemas['RefundAddressRequest']>;
/** The refund address an owner set, and what it covers. */
export type OwnerRefundAddress = Schemas['OwnerRefundAddress'];
export type SubmitAnswer = Schemas['SubmitAnswer']['result'];
export type ExecutionList = Schemas['ExecutionList'];
/** One transfer of a transaction the deposit lookup knows of: taken by an execution, or owed back (`refund`). */
export type DepositEntry = Schemas['DepositEntry'];

/** One item of a batch lookup: the record (with its statusReason), or its own error (`NOT_FOUND`, `INVALID`). */
export type LookupItem = Schemas['LookupAnswer']['result'][number];
/** Why an execution stands where it stands, as a code and in words. */
export type StatusReason = NonNullable<ExecutionRecord['statusReason']>;

/** The statuses after which an execution no longer changes: `watch` ends at them once no refund is open. */
export const FINAL_STATUSES: readonly ExecutionStatus[] = SERVICE_FINAL_STATUSES;

/** The refund states that may still change: `watch` goes on while one of the execution's refunds is in them. */
export const OPEN_REFUND_STATES: readonly ExecutionRefund['state'][] = SERVICE_OPEN_REFUND_STATES;
