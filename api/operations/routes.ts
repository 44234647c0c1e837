import type Router from '@koa/router';
import type { Registry } from 'prom-client';
import type { AppDeps } from '../deps';
import type { SharedProbe } from '../../lib/shared-probe';
import { withinMs } from '../temporal/call';
import { PROBE_MS, probeStorageNodes, registerStorageNodeGauge } from '../whitelists/node-health';

declare module 'koa' {
  interface DefaultContext {
    /** Set on `app.context` when the API begins its graceful shutdown (api/server.ts). */
    shuttingDown?: boolean;
  }
}

export type TemporalHealth = 'up' | 'down';

/** Whether Temporal answers for the namespace within the probe time; never rejects. */
export function probeTemporal(deps: AppDeps): Promise<TemporalHealth> {
  return withinMs(deps.client, PROBE_MS, () =>
    deps.client.workflowService.describeNamespace({ namespace: deps.config.temporal.namespace }),
  ).then(
    () => 'up' as const,
    () => 'down' as const,
  );
}

function readiness(temporal: TemporalHealth, shuttingDown: boolean | undefined) {
  const checks = { temporal, process: shuttingDown ? ('shutting-down' as const) : ('serving' as const) };
  const down = [...(temporal === 'down' ? ['temporal'] : []), ...(shuttingDown ? ['process'] : [])];
  return { status: down.length === 0 ? 200 : 503, body: { ready: down.length === 0, checks, down } };
}

/**
 * The public port's probes, for load balancers. `GET /healthz`: the process is up. `GET /readyz`:
 * this process can serve: Temporal answers for the namespace (a probe shared by every caller for a
 * second, so a flood of probes costs Temporal one call a second) and the process is not shutting
 * down. Storage nodes do not gate readiness: executions never touch them and a batch survives a
 * node down (408, then retried), so one node's outage must not take every API out of a load
 * balancer (docs/decisions/0040-readiness-does-not-cascade.md). Nothing here names an internal address.
 */
export function healthRoutes(router: Router, temporal: SharedProbe<TemporalHealth>): void {
  router.get('/healthz', (ctx) => {
    ctx.body = { ok: true };
  });

  router.get('/readyz', async (ctx) => {
    const { status, body } = readiness(await temporal.get(), ctx.shuttingDown);
    ctx.status = status;
    ctx.body = body;
  });
}

/**
 * The operator port's routes (OPERATOR_HOST:OPERATOR_PORT, never the public one): `GET /metrics`
 * (Prometheus text), `GET /readyz` probed afresh, with each storage node's health by URL (also
 * `intent_storage_node_up`) and, with a chain, whether its node offers call traces
 * (`chain.traces`: true, false, or null when it cannot be asked), and `GET /healthz`.
 */
export function operatorRoutes(router: Router, deps: AppDeps, registry: Registry, shuttingDown: () => boolean | undefined): void {
  registerStorageNodeGauge(registry, deps.storageNodes, deps.nodeTransport);
  router.get('/healthz', (ctx) => {
    ctx.body = { ok: true };
  });
  router.get('/readyz', async (ctx) => {
    const [temporal, storageNodes, traces] = await Promise.all([
      probeTemporal(deps),
      probeStorageNodes(deps.storageNodes, deps.nodeTransport),
      deps.deposits?.traces().catch(() => undefined),
    ]);
    const { status, body } = readiness(temporal, shuttingDown());
    ctx.status = status;
    // Traces do not gate readiness: without them, deposits from contract wallets are not seen, others are.
    ctx.body = { ...body, storageNodes, ...(deps.deposits ? { chain: { traces: traces ?? null } } : {}) };
  });
  router.get('/metrics', async (ctx) => {
    ctx.type = registry.contentType;
    ctx.body = await registry.metrics();
  });
}
