import { BaseError, ExecutionRevertedError } from 'viem';

/**
 * Whether `err` is the node saying the transaction would revert (its simulation ran the code and
 * it refused): the destination's or the token's answer, not the node's health. A timeout, a
 * refused connection or a rate limit is not one, and is retried as any node error is.
 */
export function isExecutionRevert(err: unknown): boolean {
  if (!(err instanceof BaseError)) return false;
  return err.walk((e) => e instanceof ExecutionRevertedError) instanceof ExecutionRevertedError;
}
