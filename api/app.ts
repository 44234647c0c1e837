import Router from '@koa/router';
import Koa from 'koa';
import { ServiceError, notFound } from '../domain/errors';
import { corsMiddleware } from './http/cors';
import type { AppDeps } from './deps';
import { errorMiddleware } from './http/errors';
import { allowHeader, contractMethods } from './http/contract-methods';
import { ExecutionEventHub } from './executions/events';
import { ExecutionService } from './executions/service';
import { RECORD_REFUND_ROWS, refundSummary } from './executions/refund-summary';
import { createApiMetrics, type ApiMetrics } from './operations/metrics';
import { buildOpenApiDocument } from './operations/openapi';
import { createRateLimits } from './http/rate-limit';
import { requestLog } from './http/request-log';
import { tracingMiddleware } from './http/tracing';
import { docsRoutes } from './operations/docs-routes';
import { executionRoutes } from './executions/routes';
import { refundRoutes } from './refunds/routes';
import { depositRoutes } from './deposits/routes';
import { statusPageRoutes } from './status/routes';
import { ASSETS, CONTENT_SECURITY_POLICY } from './http/pages';
import { healthRoutes, operatorRoutes, probeTemporal } from './operations/routes';
import { SharedProbe } from '../lib/shared-probe';
import { nodeName } from '../domain/node-names';
import { whitelistReadRoutes } from './whitelists/read-routes';
import { whitelistRoutes } from './whitelists/routes';
import { ReplicaClient } from '../activities/replica-repair';
import { StorageNodeReads } from './whitelists/node-reads';
import { WhitelistReads } from './whitelists/reads';
import { WhitelistService } from './whitelists/service';

/**
 * The public Koa app, with its router (tests read the registered routes off it), its metrics, its
 * SSE hub and the operator app (metrics and detailed readiness, served on the operator port).
 */
export type ServiceApp = Koa & {
  readonly router: Router;
  readonly metrics: ApiMetrics;
  readonly events: ExecutionEventHub;
  readonly operator: Koa;
};

/** How long the public /readyz reuses one Temporal probe. */
const READINESS_MAX_AGE_MS = 1000;

/** Builds the Koa app from its dependencies; the caller binds it to a port. */
export function createApp(deps: AppDeps): ServiceApp {
  const app = new Koa({ proxy: false });
  // Koa would log every error itself; errorMiddleware already did, once, with the request id.
  app.silent = true;
  const router = new Router();
  const executions = new ExecutionService(deps.client, deps.config, deps.executionStore, deps.refunds, Date.now, deps.deposits);
  const events = new ExecutionEventHub(
    (ids) => deps.executionStore.getMany(ids),
    deps.config.ssePollMs,
    deps.config.sse,
    deps.logger,
    async (ids) => {
      const rows = await deps.refunds.firstOfExecutions(ids, RECORD_REFUND_ROWS);
      return new Map([...rows].map(([id, list]) => [id, list.map(refundSummary)]));
    },
  );
  const whitelists = new WhitelistService(deps.client, deps.config, deps.storageNodes, deps.logger);
  const metrics = createApiMetrics();
  const limits = createRateLimits(deps.config, deps.limiterStore);

  healthRoutes(router, new SharedProbe(() => probeTemporal(deps), READINESS_MAX_AGE_MS));
  const document = buildOpenApiDocument(deps.config);
  docsRoutes(router, document);
  const methodsOf = contractMethods(document as Parameters<typeof contractMethods>[0]);
  executionRoutes(router, deps, executions, limits, events);
  refundRoutes(router, deps, limits);
  depositRoutes(router, deps, limits, executions.progress);
  statusPageRoutes(router, deps, executions, limits);
  whitelistRoutes(router, deps, whitelists, limits);
  // Node reads wait as long as a batch waits for its nodes by default (RequestConfig.TimeoutMs).
  whitelistReadRoutes(
    router,
    deps,
    new WhitelistReads(
      deps.storageNodes,
      new StorageNodeReads(deps.config.request.timeoutMs, deps.nodeTransport, (node) => nodeName(deps.storageNodes, node)),
      new ReplicaClient(deps.nodeTransport, deps.config.request.timeoutMs),
      deps.config.storageReplicas,
    ),
    limits,
  );

  if (deps.config.tracing) app.use(tracingMiddleware(deps.config.trustProxy));
  app.use(requestLog(deps.logger));
  app.use(metrics.middleware());
  app.use(errorMiddleware(deps.logger));
  // Inside the error middleware, so that error answers of public routes carry the CORS headers too.
  app.use(corsMiddleware(deps.config.corsOrigins));
  app.use(async (ctx, next) => {
    // Whitelist paths answer in their own error style even when no route matched (e.g. GET).
    if (ctx.path.startsWith('/chain/')) ctx.state.errorStyle = 'whitelist';
    if (ctx.path.startsWith('/status/') || ctx.path.startsWith(`${ASSETS}/`)) {
      // The status pages: their errors are pages, and every answer is locked to this origin's script and style.
      ctx.state.errorStyle = 'page';
      ctx.set('Content-Security-Policy', CONTENT_SECURITY_POLICY);
      ctx.set('X-Content-Type-Options', 'nosniff');
      ctx.set('Referrer-Policy', 'no-referrer');
    }
    await next();
  });
  // Upstream of the router, so that it sees what allowedMethods made of the request first: a
  // known path with another method (or an unknown method, which the router answers 501) is 405
  // with the router's `Allow` header (RFC 9110 §15.5.6); only an unknown path is 404.
  app.use(async (ctx, next) => {
    // The contract says which methods a path has (its parameters' patterns included): another is
    // 405 before any route sees it, and OPTIONS names those only.
    const allowed = methodsOf(ctx.path);
    const asked = ctx.method === 'HEAD' ? 'GET' : ctx.method;
    if (allowed.size > 0 && ctx.method !== 'OPTIONS' && !allowed.has(asked)) {
      ctx.set('Allow', allowHeader(allowed));
      throw new ServiceError(405, 'METHOD_NOT_ALLOWED', `method not allowed on this path; allowed: ${allowHeader(allowed)}`);
    }
    await next();
    if (allowed.size > 0 && ctx.method === 'OPTIONS' && ctx.response.get('Allow')) ctx.set('Allow', allowHeader(allowed));
    if ((ctx.status === 405 || ctx.status === 501) && ctx.body === undefined) {
      throw new ServiceError(405, 'METHOD_NOT_ALLOWED', `method not allowed on this path; allowed: ${ctx.response.get('Allow')}`);
    }
    if (ctx.status === 404 && ctx.body === undefined) throw notFound(`no route for ${ctx.method} ${ctx.path}`);
  });
  app.use(router.routes());
  app.use(router.allowedMethods());
  const operator = new Koa({ proxy: false });
  const operatorRouter = new Router();
  operatorRoutes(operatorRouter, deps, metrics.registry, () => app.context.shuttingDown);
  operator.use(operatorRouter.routes());
  operator.use(operatorRouter.allowedMethods());
  return Object.assign(app, { router, metrics, events, operator });
}
