import type Router from '@koa/router';
import type { Registry } from 'prom-client';

/** `GET /metrics`: the app's registry in the Prometheus text format. */
export function metricsRoutes(router: Router, registry: Registry): void {
  router.get('/metrics', async (ctx) => {
    ctx.type = registry.contentType;
    ctx.body = await registry.metrics();
  });
}
