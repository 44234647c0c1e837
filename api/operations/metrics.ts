import type { Context, Next } from 'koa';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Route label of a request no route matched: the raw path would make the label set unbounded. */
export const UNMATCHED_ROUTE = 'unmatched';

const SUBMIT_ROUTE = '/api/v1/executions/:wallet/submit';
const PREPARE_ROUTE = '/api/v1/executions/:wallet';
/** The refusals of admission (api/executions/capacity.ts), by the code the answer carries. */
const ADMISSION_REFUSALS = new Map([
  ['CAPACITY_FULL', 'capacity'],
  ['WALLET_CAPACITY_FULL', 'wallet'],
]);
const WHITELIST_ROUTES = new Set(['/chain/whitelists/', '/chain/whitelists']);
/** Statuses that are outcomes of a batch (decided by the batch or its precheck), not request errors. */
const BATCH_OUTCOMES = new Set([200, 403, 408, 500]);

/** The API's metrics, in a registry of their own so that several apps in one process do not clash. */
export interface ApiMetrics {
  readonly registry: Registry;
  /** Koa middleware that counts and times every request; mount it outside the error middleware. */
  middleware(): (ctx: Context, next: Next) => Promise<void>;
}

/** Creates the registry with the request, submit and whitelist metrics and Node's process metrics. */
export function createApiMetrics(): ApiMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const requests = new Counter({
    name: 'intent_http_requests_total',
    help: 'HTTP requests answered, by matched route pattern, method and status',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'intent_http_request_duration_seconds',
    help: 'HTTP request latency, by matched route pattern, method and status',
    labelNames: ['route', 'method', 'status'] as const,
    // Whitelist batches may legitimately take up to their deadline (5 s default, 60 s cap).
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  });
  const submits = new Counter({
    name: 'intent_execution_submits_total',
    help: 'Submit answers, by HTTP status and, on 200, the execution status it left (SIGNING or PREPARED)',
    labelNames: ['status', 'result'] as const,
    registers: [registry],
  });
  const refusedPrepares = new Counter({
    name: 'intent_execution_prepares_refused_total',
    help: 'Prepares refused by admission: reason capacity (503, the service holds all the open runs it may) or wallet (429, the wallet holds its share)',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const batches = new Counter({
    name: 'intent_whitelist_batches_total',
    help: 'Whitelist batches that passed authentication and validation, by outcome (200, 403, 408, 500)',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });

  return {
    registry,
    middleware: () => async (ctx, next) => {
      const stopTimer = duration.startTimer();
      try {
        await next();
      } finally {
        // Read after next(): the error middleware below has already turned a throw into a status.
        const route: string = ctx._matchedRoute ? String(ctx._matchedRoute) : UNMATCHED_ROUTE;
        const labels = { route, method: ctx.method, status: String(ctx.status) };
        requests.inc(labels);
        stopTimer(labels);
        if (route === SUBMIT_ROUTE)
          submits.inc({ status: labels.status, result: ctx.status === 200 ? String(ctx.state.outcome ?? 'unknown') : 'none' });
        const refusal =
          route === PREPARE_ROUTE && ctx.method === 'POST'
            ? ADMISSION_REFUSALS.get(String((ctx.body as { code?: unknown } | undefined)?.code))
            : undefined;
        if (refusal) refusedPrepares.inc({ reason: refusal });
        if (WHITELIST_ROUTES.has(route) && ctx.method === 'POST' && BATCH_OUTCOMES.has(ctx.status)) {
          batches.inc({ outcome: labels.status });
        }
      }
    },
  };
}
