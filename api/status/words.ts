import type { HoldReason, RefundState } from '../../contracts/refunds';
import type { ExecutionStatus } from '../../domain/execution-record';

/** The status pages' words for what the API names by code: a depositor reads these, never the codes alone. */

export const STATUS_WORDS: Record<ExecutionStatus, string> = {
  PREPARED: 'Waiting for the deposit',
  OPERATION_PENDING: 'Deposit received, waiting for the signature',
  SIGNING: 'Signed',
  EXPIRED: 'Expired',
  CANCELLED: 'Cancelled',
};

/** What each history entry means on the timeline. */
export const HISTORY_WORDS: Record<ExecutionStatus, string> = {
  PREPARED: 'Prepared',
  OPERATION_PENDING: 'Deposit taken: waiting for the signature',
  SIGNING: 'Signed: the execution is signing',
  EXPIRED: 'Expired',
  CANCELLED: 'Cancelled by the owner',
};

export const REFUND_STATE_WORDS: Record<RefundState, string> = {
  due: 'to be paid back',
  held: 'waiting for a person',
  paying: 'refund sent, waiting for it to be mined',
  refunded: 'paid back',
  waived: 'not paid back (decided by a person)',
  void: 'void: the chain no longer shows the transfer',
};

export const HOLD_WORDS: Record<HoldReason, string> = {
  'no-destination': 'no refund address, and the chain shows no payer to send it back to',
  'contract-payer': 'the payer is a contract: the money might never reach a person',
  'too-small': 'too small to pay back (below the minimum, or not worth the fee)',
  'above-limit': 'above the amount the service pays back without approval',
  'off-chain': 'not a transfer the service can pay back on a chain',
  'no-gas-key': 'a token refund, and the service has no account to pay its fee',
  'refund-address-refused': 'the refund address cannot receive it',
  'no-key': 'the service cannot sign from this deposit address',
  'nonce-mismatch': 'the deposit address was spent from outside the service',
  reverted: 'the refund transaction failed on the chain',
  'no-transfer-log': 'the token refund did not show the transfer',
  'fee-cap': 'the refund is waiting for lower fees',
  'refund-reverts': 'the destination refuses the money',
};

export const REFUND_REASON_WORDS: Record<string, string> = {
  expired: 'arrived after the execution expired',
  cancelled: 'arrived after the execution was cancelled',
  'other-tx': 'a second transfer; the execution had its deposit',
  'below-minimum': 'below the minimum',
  'wrong-chain': 'on another chain',
  'wrong-asset': 'of another asset',
  closed: 'arrived after the execution finished',
  'cancelled-after-deposit': 'the deposit, owed back after the cancel',
  'unsigned-by-deadline': 'the deposit, owed back: no signature by the deadline',
};
