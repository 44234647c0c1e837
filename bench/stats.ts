/** Latency summary of one measured run. */
export interface Summary {
  count: number;
  /** Completed operations per second of wall time. */
  opsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
}

/** The q-quantile (0..1) of sorted values, nearest rank. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank];
}

/** Summarises latencies (ms) measured over `wallMs` of wall time. */
export function summarise(latenciesMs: readonly number[], wallMs: number): Summary {
  const sorted = [...latenciesMs].sort((a, b) => a - b);
  const mean = sorted.reduce((a, b) => a + b, 0) / Math.max(1, sorted.length);
  return {
    count: sorted.length,
    opsPerSec: round((sorted.length * 1000) / wallMs, 1),
    p50Ms: round(quantile(sorted, 0.5), 2),
    p99Ms: round(quantile(sorted, 0.99), 2),
    meanMs: round(mean, 2),
  };
}

export const round = (x: number, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;

/** a / b, rounded; the figure every comparison in the table is reported as. */
export const ratio = (a: number, b: number) => round(a / b, 2);
