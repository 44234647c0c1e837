import type Router from '@koa/router';
import type { AppDeps } from '../deps';

const PROBE_MS = 2000;

/** `GET /healthz`: the process is up. `GET /readyz`: Temporal and every storage node answer. */
export function healthRoutes(router: Router, deps: AppDeps): void {
  router.get('/healthz', (ctx) => {
    ctx.body = { ok: true };
  });

  router.get('/readyz', async (ctx) => {
    const checks: Record<string, 'up' | 'down'> = {};
    const probes: Promise<void>[] = [
      deps.client
        .withDeadline(Date.now() + PROBE_MS, () => deps.client.workflowService.describeNamespace({ namespace: deps.config.temporal.namespace }))
        .then(() => void (checks.temporal = 'up'), () => void (checks.temporal = 'down')),
      ...deps.storageNodes.map((node) =>
        fetch(`${node}/healthz`, { signal: AbortSignal.timeout(PROBE_MS) })
          .then((r) => void (checks[node] = r.ok ? 'up' : 'down'), () => void (checks[node] = 'down')),
      ),
    ];
    await Promise.all(probes);
    const down = Object.keys(checks).filter((k) => checks[k] === 'down');
    ctx.status = down.length === 0 ? 200 : 503;
    ctx.body = { ready: down.length === 0, checks, down };
  });
}
