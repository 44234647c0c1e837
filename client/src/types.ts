import { FINAL_STATUSES as SERVICE_FINAL_STATUSES } from '../../domain/execution-state.js';
import type { components } from './openapi.js';

// Every shape here is the service's OpenAPI document's (./openapi.ts, generated from it).

type Schemas = components['schemas'];

export type ExecutionRecord = Schemas['ExecutionRecord'];
export type ExecutionStatus = ExecutionRecord['status'];
export type PrepareRequest = Schemas['PrepareRequest'];
export type DepositRequest = Schemas['DepositRequest'];
/** The document lists the server's allowed domains as an enum; a client names any. */
type WithAnyDomain<T extends { connectEnvelope: object }> = Omit<T, 'connectEnvelope'> & {
  connectEnvelope: Omit<T['connectEnvelope'], 'domain'> & { domain: string };
};
export type SubmitRequest = WithAnyDomain<Schemas['SubmitRequest']>;
export type CancelRequest = WithAnyDomain<Schemas['CancelRequest']>;
export type SubmitAnswer = Schemas['SubmitAnswer']['result'];
export type ExecutionList = Schemas['ExecutionList'];
/** One transfer of a transaction the deposit lookup knows of: taken by an execution, or owed back (`refund`). */
export type DepositEntry = Schemas['DepositEntry'];

/** The statuses after which an execution no longer changes: `watch` ends at them. */
export const FINAL_STATUSES: readonly ExecutionStatus[] = SERVICE_FINAL_STATUSES;
