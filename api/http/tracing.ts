import type { Context, Next } from 'koa';
import proxyaddr from 'proxy-addr';
import { endHttpSpan, inContext, setServerRoute, startServerSpan } from '../../lib/tracing';

/** `/api/v1/executions/:wallet/submit` → `/api/v1/executions/{wallet}/submit`, the template form of the HTTP conventions. */
const template = (route: string) => route.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

/**
 * The SERVER span of every request (outermost, so that the request log line and everything the
 * route does run inside it): it continues the caller's `traceparent` only when the request came
 * through a proxy of `trustProxy` (TRUST_PROXY: the deployment's own edge); any other caller's
 * starts a new trace that links to it, so that no client decides what is sampled nor sees its ids
 * reach the storage nodes and the webhook receivers. It is named by its route once
 * the router matched one (`POST /api/v1/executions/{wallet}/submit`), and carries the wallet, the
 * execution id and the batch id a route learned (`ctx.state`), never a header or a body.
 */
export function tracingMiddleware(trustProxy: readonly string[]) {
  const trusted = proxyaddr.compile([...trustProxy]);
  return async (ctx: Context, next: Next) => {
    const peer = ctx.req.socket.remoteAddress;
    const { span, context } = startServerSpan(ctx.method, ctx.path, ctx.req.headers, peer !== undefined && trusted(peer, 0));
    try {
      await inContext(context, next);
    } finally {
      const route = ctx._matchedRoute;
      if (typeof route === 'string') setServerRoute(span, ctx.method, template(route));
      const params = (ctx.params ?? {}) as Record<string, string | undefined>;
      const ids: Record<string, string | undefined> = {
        'intent_service.wallet': params.wallet,
        'intent_service.execution_id': params.executionId ?? ctx.state.executionId,
        'intent_service.batch_id': params.batchId ?? ctx.state.batchId,
        'temporal.workflow_id': ctx.state.workflowId,
      };
      for (const [key, value] of Object.entries(ids)) if (typeof value === 'string') span.setAttribute(key, value);
      endHttpSpan(span, 'server', ctx.status);
    }
  };
}
