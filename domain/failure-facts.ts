import { ApplicationFailure } from '@temporalio/common';

/** What a Temporal failure says: its ApplicationFailure's type, message and first detail. */
export interface FailureFacts {
  type?: string;
  message: string;
  detail?: unknown;
}

/**
 * Reads a failure, looking through one wrapper (an ActivityFailure in a workflow, a
 * WorkflowUpdateFailedError in a client: both carry what was thrown as their `cause`). Without an
 * ApplicationFailure inside (a timeout, a lost worker) there is no type, only a message.
 */
export function failureFacts(err: unknown, isWrapper: (e: unknown) => e is Error): FailureFacts {
  const inner = isWrapper(err) ? (err.cause ?? err) : err;
  if (inner instanceof ApplicationFailure) return { type: inner.type || undefined, message: inner.message, detail: inner.details?.[0] };
  return { message: inner instanceof Error ? inner.message : String(inner) };
}
