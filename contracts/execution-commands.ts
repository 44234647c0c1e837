/**
 * How the execution's commands are refused, written once. Each command (submit, cancel, deposit)
 * has one table: for every outcome of its check that refuses (domain/execution-state.ts:
 * checkSubmit, checkCancel, and a deposit's refusal reason), the ApplicationFailure the workflow's
 * Update validator throws and the HTTP answer the API sends, in the same words. The workflow
 * throws from these tables; the API answers from them, whether the open workflow refused (its
 * failure type) or the API judged the record itself (a replay, or a run that has closed).
 *
 * A new refusal is a new outcome of the check and one entry here: the compiler asks for the entry.
 */
import type { CancelCheck, ExecutionStatus, RefusedDeposit, SubmitCheck } from '../domain/execution-state';
import { ExecutionFailure } from './temporal';

/** One refusal: the failure the open workflow throws, and the HTTP answer to the client. */
export interface Refusal {
  /** The ApplicationFailure type (ExecutionFailure); the API knows a refused Update by it. */
  readonly failure: string;
  /** The failure's message and the HTTP answer's `error`: the same words either way. */
  readonly message: string;
  /** The first detail of the failure, when it carries one. */
  readonly detail?: ExecutionStatus;
  readonly status: 409;
  /** The HTTP answer's `code`. */
  readonly code: string;
}

/** Refusals of a submit, by checkSubmit's outcome. */
export const SUBMIT_REFUSALS = {
  expired: { failure: ExecutionFailure.expired, message: 'execution is EXPIRED', status: 409, code: 'EXPIRED' },
  cancelled: { failure: ExecutionFailure.cancelled, message: 'execution is CANCELLED', status: 409, code: 'CANCELLED' },
  'other-signature': {
    failure: ExecutionFailure.signatureConflict,
    message: 'execution already holds a different signature',
    status: 409,
    code: 'SIGNATURE_CONFLICT',
  },
} as const satisfies Record<Exclude<SubmitCheck, 'ok' | 'duplicate'>, Refusal>;

/** Refusals of a cancel, by checkCancel's outcome; the failure's detail is the status (operators read it). */
export const CANCEL_REFUSALS = {
  signing: {
    failure: ExecutionFailure.cancelRefused,
    message: 'execution is SIGNING and can no longer be cancelled',
    detail: 'SIGNING',
    status: 409,
    code: 'CANCEL_REFUSED',
  },
  expired: {
    failure: ExecutionFailure.cancelRefused,
    message: 'execution is EXPIRED and can no longer be cancelled',
    detail: 'EXPIRED',
    status: 409,
    code: 'CANCEL_REFUSED',
  },
} as const satisfies Record<Exclude<CancelCheck, 'ok' | 'duplicate'>, Refusal>;

/** Why a deposit is not taken: the record's refusal reasons, and `closed` (only the API says it: the run had ended). */
export type DepositRefusalReason = RefusedDeposit['reason'] | 'closed';

const depositRefused = (message: string) =>
  ({ failure: ExecutionFailure.depositRefused, message, status: 409, code: 'DEPOSIT_REFUSED' }) as const;

/** Refusals of a deposit, by reason. Every refused deposit is owed back: the words say it was recorded for refund. */
export const DEPOSIT_REFUSALS = {
  cancelled: depositRefused('execution is CANCELLED; the deposit was recorded for refund'),
  expired: depositRefused('execution is EXPIRED; the deposit was recorded for refund'),
  'below-minimum': depositRefused("the deposit is less than the deposit target's minAmount; it was recorded for refund"),
  'wrong-chain': depositRefused("the deposit is on another chain than the deposit target's; it was recorded for refund"),
  'wrong-asset': depositRefused("the deposit is in another asset than the deposit target's; it was recorded for refund"),
  'other-tx': depositRefused('execution already has a deposit with another txHash; this one was recorded for refund'),
  closed: depositRefused('execution is closed; the deposit was recorded for refund'),
} as const satisfies Record<DepositRefusalReason, Refusal>;

/** A command's table of refusals. */
export type Refusals = Readonly<Record<string, Refusal>>;

/** The refusal of a check's outcome; undefined for `ok` and `duplicate` (and anything the table does not refuse). */
export function refusalOf(refusals: Refusals, outcome: string): Refusal | undefined {
  return Object.hasOwn(refusals, outcome) ? refusals[outcome] : undefined;
}

/**
 * The HTTP answer to an Update the workflow refused with `failure`, when it is one of the command's
 * refusals: the status and code of its type, in the words the workflow sent.
 */
export function refusalOfFailure(refusals: Refusals, failure: { type?: string; message: string }): Refusal | undefined {
  const known = Object.values(refusals).find((r) => r.failure === failure.type);
  return known && { ...known, message: failure.message };
}
