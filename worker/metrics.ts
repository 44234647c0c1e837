import type { NodeRequestEvent } from '../activities';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** What applyToNode's failure says about the node; the ApplicationFailure type, or `error`. */
function failureReason(err: unknown): string {
  const e = err as { type?: unknown; name?: unknown };
  if (typeof e?.type === 'string' && e.type) return e.type;
  if (e?.name === 'CancelledFailure' || e?.name === 'AbortError') return 'Cancelled';
  return 'error';
}

/** The worker's metrics, in a registry of their own (a test process may hold several). */
export interface WorkerMetrics {
  readonly registry: Registry;
  /**
   * Records one apply request to a storage node (latency by node and outcome, failures by reason).
   * The activities call it through their `onNodeRequest` hook, so activities/ stays metric-free.
   */
  readonly recordNodeRequest: (event: NodeRequestEvent) => void;
}

/** Creates the storage node metrics and Node's process metrics. */
export function createWorkerMetrics(): WorkerMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const latency = new Histogram({
    name: 'intent_storage_node_request_duration_seconds',
    help: 'Latency of one apply request to a storage node, by node and outcome (ok or failed)',
    labelNames: ['node', 'outcome'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const failures = new Counter({
    name: 'intent_storage_node_failures_total',
    help: 'Failed apply requests to a storage node, by node and reason (NodeUnreachable, NodeTimeout, NodeRejected, NodeBadResponse, Cancelled, error)',
    labelNames: ['node', 'reason'] as const,
    registers: [registry],
  });

  const recordNodeRequest = ({ node, seconds, error }: NodeRequestEvent) => {
    latency.observe({ node, outcome: error === undefined ? 'ok' : 'failed' }, seconds);
    if (error !== undefined) failures.inc({ node, reason: failureReason(error) });
  };
  return { registry, recordNodeRequest };
}
