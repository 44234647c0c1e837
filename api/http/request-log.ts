import { randomUUID } from 'node:crypto';
import type { Context, Next } from 'koa';
import type { Logger } from 'pino';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Gives every request an id (the caller's `X-Request-Id` when it is sane) and logs one line when it
 * ends: method, route (the pattern, not the path), status, duration, the workflow it touched and,
 * where a route sets one, its outcome (submit: the execution status; whitelists: the batch status).
 * Headers and bodies are never logged, so tokens and signatures cannot leak through here.
 */
export function requestLog(logger: Logger) {
  return async (ctx: Context, next: Next) => {
    const started = process.hrtime.bigint();
    const offered = ctx.get('x-request-id');
    ctx.state.requestId = REQUEST_ID.test(offered) ? offered : randomUUID();
    ctx.set('X-Request-Id', ctx.state.requestId);
    try {
      await next();
    } finally {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      logger.info(
        {
          reqId: ctx.state.requestId,
          method: ctx.method,
          route: ctx._matchedRoute ?? null,
          status: ctx.status,
          ms: Math.round(ms * 10) / 10,
          workflowId: ctx.state.workflowId,
          outcome: ctx.state.outcome,
        },
        'request',
      );
    }
  };
}
