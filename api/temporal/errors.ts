import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
  isGrpcServiceError,
} from '@temporalio/client';
import { ServiceError, internal, notFound, unavailable } from '../../domain/errors';
import { failureFacts, type FailureFacts } from '../../domain/failure-facts';

/** The ApplicationFailure behind a failed Update, if any: its type, message and first detail. */
export function updateFailureType(err: unknown): FailureFacts | undefined {
  const isUpdateFailure = (e: unknown): e is WorkflowUpdateFailedError => e instanceof WorkflowUpdateFailedError;
  return isUpdateFailure(err) ? failureFacts(err, isUpdateFailure) : undefined;
}

// gRPC codes that say "the call may or may not have taken effect; try again":
// CANCELLED (our abort signal), DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED (the server shed load, e.g.
// too many in-flight Updates on one workflow), UNAVAILABLE (the frontend is unreachable).
const RETRYABLE_GRPC_CODES = new Set([1, 4, 8, 14]);

/** Seconds a client should wait before retrying a call whose outcome is unknown. */
export const UNKNOWN_OUTCOME_RETRY_AFTER_S = 1;

/**
 * True when a Temporal call failed without telling whether it took effect: a deadline or our
 * abort signal, load shedding, or an unreachable frontend, anywhere in the error's cause chain.
 */
export function isUnknownOutcome(err: unknown): boolean {
  return anyCause(
    err,
    (e) =>
      e instanceof WorkflowUpdateRPCTimeoutOrCancelledError ||
      e.name === 'AbortError' ||
      e.name === 'TimeoutError' ||
      (isGrpcServiceError(e) && RETRYABLE_GRPC_CODES.has(e.code)),
  );
}

/** Whether `err` or one of its first eight causes satisfies `test`. */
function anyCause(err: unknown, test: (e: Error) => boolean): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    if (test(e)) return true;
  }
  return false;
}

/**
 * True when Temporal refused a query or Update because the workflow's last task failed or timed out
 * and is being retried (gRPC FAILED_PRECONDITION, "Workflow Task in failed state"), or because the
 * task that carried the Update failed while it was in flight ("unexpected workflow task failure": a
 * worker recreated under load drops its tasks). Nothing was applied; the workflow answers again once
 * a task completes, so the caller should retry.
 */
export function isWorkflowTaskRetrying(err: unknown): boolean {
  return anyCause(
    err,
    (e) =>
      isGrpcServiceError(e) &&
      e.code === 9 &&
      /workflow task in failed state|unexpected workflow task failure/i.test(e.details ?? e.message),
  );
}

/**
 * True when Temporal could not hand a query to any worker (gRPC FAILED_PRECONDITION, "no poller seen
 * for task queue recently"): every worker is down or restarting. Nothing was read; the same request
 * answers once a worker polls again.
 */
export function isNoWorkerPolling(err: unknown): boolean {
  return anyCause(err, (e) => isGrpcServiceError(e) && e.code === 9 && /no poller seen for task queue/i.test(e.details ?? e.message));
}

/** The failure type the server gives an Update it rejected because no worker processed it. */
export const UNPROCESSED_UPDATE_FAILURE = 'UnprocessedUpdate';

/**
 * True when the server rejected an Update because no worker processed it: the workflow task that
 * carried it completed without it (a worker recreated, or one that dropped the activation). The
 * server says so with an ApplicationFailure of type UnprocessedUpdate, which no workflow of ours
 * throws. The Update did not happen; the same request may be sent again.
 */
export function isUpdateNotProcessed(err: unknown): boolean {
  if (!(err instanceof WorkflowUpdateFailedError)) return false;
  const facts = updateFailureType(err);
  return (
    facts?.type === UNPROCESSED_UPDATE_FAILURE ||
    (!facts?.type && /rejected because it wasn't processed by worker/i.test(facts?.message ?? ''))
  );
}

/** Seconds a client should wait before retrying a call to a workflow whose task is being retried. */
export const TASK_RETRY_AFTER_S = 2;

/**
 * Maps what the Temporal client throws to a ServiceError. `known` maps ApplicationFailure types of
 * rejected Updates to answers. A call whose outcome is unknown (deadline passed, load shed,
 * Temporal unreachable) is a 503 with Retry-After: every route makes the same request safe to
 * repeat. A workflow whose task is being retried (slow or restarted worker) refused the call: also
 * 503 + Retry-After. Anything else is a 500 whose details go only to the log.
 */
export function mapTemporalError(err: unknown, what: string, known: Record<string, (message: string) => ServiceError> = {}): ServiceError {
  if (err instanceof ServiceError) return err;
  if (err instanceof WorkflowNotFoundError) return notFound(`${what} not found`);
  const failure = updateFailureType(err);
  if (failure?.type && known[failure.type]) return known[failure.type](failure.message);
  if (err instanceof WorkflowExecutionAlreadyStartedError) return new ServiceError(409, 'ALREADY_EXISTS', `${what} already exists`);
  // A query or update sent to a workflow id that never existed surfaces as gRPC NOT_FOUND.
  if (isGrpcServiceError(err) && err.code === 5) return notFound(`${what} not found`);
  if (isUnknownOutcome(err)) {
    return unavailable(
      'the service is busy or briefly unavailable and the outcome is unknown; the same request may be retried safely',
      UNKNOWN_OUTCOME_RETRY_AFTER_S,
      err,
    );
  }
  if (isWorkflowTaskRetrying(err)) {
    return unavailable(`the ${what} cannot answer until its worker completes a retried task; retry shortly`, TASK_RETRY_AFTER_S, err);
  }
  if (isNoWorkerPolling(err)) return unavailable(`no worker can answer for the ${what} right now; retry shortly`, TASK_RETRY_AFTER_S, err);
  if (isUpdateNotProcessed(err))
    return unavailable(`no worker took the change to the ${what}; nothing changed, retry shortly`, TASK_RETRY_AFTER_S, err);
  return internal(`temporal call failed for ${what}`, err);
}
