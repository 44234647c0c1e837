import type Router from '@koa/router';
import type { Registry } from 'prom-client';
import type { AppDeps } from '../deps';
import { withinMs } from '../temporal-call';
import { PROBE_MS, probeStorageNodes, registerStorageNodeGauge } from '../storage-node-health';

declare module 'koa' {
  interface DefaultContext {
    /** Set on `app.context` when the API begins its graceful shutdown (api/server.ts). */
    shuttingDown?: boolean;
  }
}

/**
 * `GET /healthz`: the process is up. `GET /readyz`: this process can serve: Temporal answers
 * for the namespace and the process is not shutting down. Storage nodes do not gate readiness:
 * executions never touch them and a batch survives a node down (408, then retried), so one node's
 * outage must not take every API out of a load balancer (docs/decisions/0040-readiness-does-not-cascade.md).
 * Their health is the `storageNodes` field here and the `intent_storage_node_up` metric.
 */
export function healthRoutes(router: Router, deps: AppDeps, registry?: Registry): void {
  if (registry) registerStorageNodeGauge(registry, deps.storageNodes, deps.nodeTransport);

  router.get('/healthz', (ctx) => {
    ctx.body = { ok: true };
  });

  router.get('/readyz', async (ctx) => {
    const [temporal, storageNodes] = await Promise.all([
      withinMs(deps.client, PROBE_MS, () =>
        deps.client.workflowService.describeNamespace({ namespace: deps.config.temporal.namespace }),
      ).then(
        () => 'up' as const,
        () => 'down' as const,
      ),
      probeStorageNodes(deps.storageNodes, deps.nodeTransport),
    ]);
    const checks = { temporal, process: ctx.shuttingDown ? ('shutting-down' as const) : ('serving' as const) };
    const down = [...(temporal === 'down' ? ['temporal'] : []), ...(ctx.shuttingDown ? ['process'] : [])];
    ctx.status = down.length === 0 ? 200 : 503;
    ctx.body = { ready: down.length === 0, checks, down, storageNodes };
  });
}
