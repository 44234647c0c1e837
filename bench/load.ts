/** Latencies (ms) of every operation and the wall time of the whole run. */
export interface LoadResult {
  latenciesMs: number[];
  wallMs: number;
  errors: number;
  firstError?: string;
}

/**
 * Runs `op(0..count-1)` from `concurrency` closed-loop clients (each starts its next operation
 * when the last one ends) and times every operation. An operation that throws counts as an
 * error, not as a latency.
 */
export async function closedLoop(count: number, concurrency: number, op: (i: number) => Promise<void>): Promise<LoadResult> {
  const latenciesMs: number[] = [];
  let next = 0;
  let errors = 0;
  let firstError: string | undefined;
  const started = performance.now();
  const client = async () => {
    for (let i = next++; i < count; i = next++) {
      const t0 = performance.now();
      try {
        await op(i);
        latenciesMs.push(performance.now() - t0);
      } catch (err) {
        errors++;
        firstError ??= (err as Error).message;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, client));
  return { latenciesMs, wallMs: performance.now() - started, errors, firstError };
}

/** Merges runs of the same kind (e.g. the two halves of an A-B-B-A schedule). */
export function merge(runs: readonly LoadResult[]): LoadResult {
  return {
    latenciesMs: runs.flatMap((r) => r.latenciesMs),
    wallMs: runs.reduce((a, r) => a + r.wallMs, 0),
    errors: runs.reduce((a, r) => a + r.errors, 0),
    firstError: runs.find((r) => r.firstError)?.firstError,
  };
}
