export {
  IntentClient,
  walletOf,
  type CancelInput,
  type ExecutionPage,
  type IntentClientOptions,
  type ListQuery,
  type PageList,
  type SubmitInput,
  type WatchEvent,
  type WatchOptions,
} from './client.js';
export { IntentServiceError } from './errors.js';
export type { CallOptions } from './http.js';
export {
  buildCancelMessage,
  buildSigningMessage,
  intentHash,
  nacl25519Signer,
  signCancel,
  signCancelSync,
  signSubmit,
  signSubmitSync,
  type CancelSigning,
  type KeyEncoding,
  type Signer,
  type SubmitSigning,
  type SyncSigner,
} from './signing.js';
export {
  FINAL_STATUSES,
  OPEN_REFUND_STATES,
  type CancelRequest,
  type DepositEntry,
  type DepositRequest,
  type ExecutionRecord,
  type ExecutionRefund,
  type ExecutionStatus,
  type LookupItem,
  type PrepareRequest,
  type StatusReason,
  type SubmitAnswer,
  type SubmitRequest,
} from './types.js';
export type { components, operations, paths } from './openapi.js';
