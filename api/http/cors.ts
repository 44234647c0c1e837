import cors from '@koa/cors';
import type { Context, Middleware, Next } from 'koa';

const EXECUTIONS = /^\/api\/v1\/executions\/([^/]+)(?:\/([^/]+)(?:\/([^/]+))?)?\/?$/;

/**
 * The methods a browser may use cross-origin on `path`: only the public execution routes (no
 * token: submit, cancel, the refund address, read one, list, events, the batch lookup). The token routes (prepare, deposit, whitelists)
 * get no CORS headers at all, so no browser origin can call them with a user's credentials.
 */
export function publicMethods(path: string): Array<'GET' | 'POST'> {
  const m = EXECUTIONS.exec(path);
  if (!m) return [];
  const [, first, second, third] = m;
  if (second === undefined) return first === 'lookup' ? ['POST'] : ['GET']; // the batch lookup; list (POST here is prepare, with a token)
  if (third === undefined) return second === 'submit' ? ['POST'] : ['GET']; // submit (no executionId is "submit"); read one
  if (third === 'cancel' || third === 'refund-address') return ['POST'];
  if (third === 'events') return ['GET'];
  return []; // deposit
}

/**
 * CORS for browser frontends (@koa/cors): the origins of CORS_ORIGINS, on the public routes only,
 * never with credentials. No origins configured: no CORS headers anywhere.
 */
export function corsMiddleware(origins: readonly string[]): Middleware {
  const allowed = new Set(origins);
  const common = {
    origin: (ctx: Context) => (allowed.has(ctx.get('Origin')) ? ctx.get('Origin') : ''),
    credentials: false,
    allowHeaders: ['Content-Type', 'X-Request-Id', 'Last-Event-ID'],
    exposeHeaders: ['X-Request-Id', 'Retry-After', 'Idempotent-Replayed', 'RateLimit', 'RateLimit-Policy'],
    maxAge: 600,
    keepHeadersOnError: true,
  };
  const byMethods = new Map<string, Middleware>();
  for (const methods of [['GET'], ['POST']])
    byMethods.set(methods.join(','), cors({ ...common, allowMethods: methods }) as unknown as Middleware);
  return async (ctx: Context, next: Next) => {
    const methods = allowed.size === 0 ? [] : publicMethods(ctx.path);
    if (methods.length === 0 || !ctx.get('Origin')) return next();
    // A preflight for a method the path does not offer publicly gets no CORS headers: the browser stops there.
    const asked =
      ctx.method === 'OPTIONS' ? ctx.get('Access-Control-Request-Method').toUpperCase() : ctx.method === 'HEAD' ? 'GET' : ctx.method;
    if (asked && !(methods as string[]).includes(asked)) return next();
    return byMethods.get(methods.join(','))!(ctx, next);
  };
}
