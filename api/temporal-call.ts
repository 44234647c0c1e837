import type { Client } from '@temporalio/client';

/**
 * Runs Temporal client calls so that they settle within `ms`, whatever the channel does.
 *
 * A gRPC deadline and an abort signal are both passed down, but neither bounds the call on its own
 * while Temporal is down: the client's retry interceptor re-sends an UNAVAILABLE call on a fresh
 * gRPC call that the abort signal does not reach, with back-off delays of up to 5 s, so a 5 s call
 * was seen answering after 9.6 s. The race below rejects on time with the signal's `TimeoutError`
 * (an unknown outcome: `isUnknownOutcome` maps it to 503 + Retry-After); the abandoned call ends
 * at its deadline and its result is dropped.
 */
export function withinMs<R>(client: Client, ms: number, fn: () => Promise<R>): Promise<R> {
  const signal = AbortSignal.timeout(Math.max(0, ms));
  const call = client.withAbortSignal(signal, () => client.withDeadline(Date.now() + ms, fn));
  let onAbort: (() => void) | undefined;
  const expired = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  // Whichever loses the race must not become an unhandled rejection.
  call.catch(() => undefined);
  expired.catch(() => undefined);
  return Promise.race([call, expired]).finally(() => signal.removeEventListener('abort', onAbort!));
}
