import type { Client } from '@temporalio/client';

/**
 * Per connection: the calls that `withinMs` stopped waiting for and that have not ended yet. Keyed by
 * the connection, not the client, since several clients share one and it is the connection that closes.
 */
const abandoned = new WeakMap<Client['connection'], Set<Promise<unknown>>>();

/**
 * Runs Temporal client calls so that they settle within `ms`, whatever the channel does.
 *
 * A gRPC deadline and an abort signal are both passed down, but neither bounds the call on its own
 * while Temporal is down: the client's retry interceptor re-sends an UNAVAILABLE call on a fresh
 * gRPC call that the abort signal does not reach, with back-off delays of up to 5 s, so a 5 s call
 * was seen answering after 9.6 s. The race below rejects on time with the signal's `TimeoutError`
 * (an unknown outcome: `isUnknownOutcome` maps it to 503 + Retry-After). The abandoned call ends
 * at its deadline (a retry past it fails at once); `settleAbandoned` waits for it before the
 * connection closes, since a retry on a closed channel throws from a timer.
 */
export function withinMs<R>(client: Client, ms: number, fn: () => Promise<R>): Promise<R> {
  const signal = AbortSignal.timeout(Math.max(0, ms));
  const call = client.withAbortSignal(signal, () => client.withDeadline(Date.now() + ms, fn));
  let onAbort: (() => void) | undefined;
  const expired = new Promise<never>((_, reject) => {
    onAbort = () => {
      const pending = abandoned.get(client.connection) ?? new Set();
      abandoned.set(client.connection, pending);
      const settled: Promise<boolean> = call.then(
        () => pending.delete(settled),
        () => pending.delete(settled),
      );
      pending.add(settled);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
  // Whichever loses the race must not become an unhandled rejection.
  call.catch(() => undefined);
  expired.catch(() => undefined);
  return Promise.race([call, expired]).finally(() => signal.removeEventListener('abort', onAbort!));
}

/** Resolves once every call that `withinMs` gave up on over `client`'s connection has ended (each is bounded by its deadline). */
export async function settleAbandoned(client: Client): Promise<void> {
  const pending = abandoned.get(client.connection);
  if (pending) await Promise.allSettled([...pending]);
}
