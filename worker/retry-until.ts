/** How long a start-up step waits before trying again. */
export const START_RETRY_MS = 5_000;

/**
 * Runs `attempt` until it resolves, reporting each failure to `onError` and waiting `retryMs`
 * between tries, until `signal` aborts (then undefined). A failure `fatal` says is final is rethrown.
 * For the worker's start-up steps that only a down Temporal or chain node delays.
 */
export async function retryUntil<T>(
  attempt: () => Promise<T>,
  options: { signal: AbortSignal; onError: (err: Error) => void; fatal?: (err: unknown) => boolean; retryMs?: number },
): Promise<T | undefined> {
  while (!options.signal.aborted) {
    try {
      return await attempt();
    } catch (err) {
      if (options.fatal?.(err)) throw err;
      options.onError(err as Error);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, options.retryMs ?? START_RETRY_MS);
        options.signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
      });
    }
  }
  return undefined;
}
