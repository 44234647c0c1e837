import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, WorkflowUpdateFailedError, isGrpcServiceError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { ServiceError, internal, notFound } from '../domain/errors';

/** The ApplicationFailure type behind a failed Update, if any. */
export function updateFailureType(err: unknown): { type?: string; message: string } | undefined {
  if (!(err instanceof WorkflowUpdateFailedError)) return undefined;
  const cause = err.cause;
  if (cause instanceof ApplicationFailure) return { type: cause.type ?? undefined, message: cause.message };
  return { message: cause?.message ?? err.message };
}

/**
 * Maps what the Temporal client throws to a ServiceError. `known` maps ApplicationFailure types of
 * rejected Updates to answers; everything unexpected (Temporal unreachable, deadline passed) is a
 * 500 whose details go only to the log.
 */
export function mapTemporalError(err: unknown, what: string, known: Record<string, (message: string) => ServiceError> = {}): ServiceError {
  if (err instanceof ServiceError) return err;
  if (err instanceof WorkflowNotFoundError) return notFound(`${what} not found`);
  const failure = updateFailureType(err);
  if (failure?.type && known[failure.type]) return known[failure.type](failure.message);
  if (err instanceof WorkflowExecutionAlreadyStartedError) return new ServiceError(409, 'ALREADY_EXISTS', `${what} already exists`);
  // A query or update sent to a workflow id that never existed surfaces as gRPC NOT_FOUND.
  if (isGrpcServiceError(err) && err.code === 5) return notFound(`${what} not found`);
  return internal(`temporal call failed for ${what}`, err);
}
