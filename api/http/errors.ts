import type { Context, Next } from 'koa';
import { STATUS_CODES } from 'node:http';
import type { Logger } from 'pino';
import { ServiceError } from '../../domain/errors';
import { errorPage } from './pages';

/** How a route family renders its errors: the spec gives the two operations different bodies. */
export type ErrorStyle = 'execution' | 'whitelist' | 'page';

const GENERIC_5XX = 'internal error; the request may be retried';

/** Turns anything thrown below into a ServiceError. */
export function toServiceError(err: unknown): ServiceError {
  if (err instanceof ServiceError) return err;
  const status = (err as any)?.status ?? (err as any)?.statusCode;
  // Koa/raw-body errors carry an HTTP status (e.g. a client that aborted); keep 4xx, hide the rest.
  if (Number.isInteger(status) && ((status >= 400 && status < 500) || status === 501)) {
    return new ServiceError(
      status,
      'HTTP_ERROR',
      (err as any).expose ? String((err as Error).message) : (STATUS_CODES[status] ?? 'Bad Request'),
    );
  }
  return new ServiceError(500, 'INTERNAL', GENERIC_5XX, { expose: false, cause: err });
}

/**
 * The one place where errors become HTTP answers. `ctx.state.errorStyle` picks the body:
 * executions `{ error, code }`, whitelists `{ error, errorMessage }`, the status pages an HTML page. A 5xx body never carries internals;
 * the full error goes to the log with the request id.
 */
export function errorMiddleware(logger: Logger) {
  return async (ctx: Context, next: Next) => {
    try {
      await next();
    } catch (thrown) {
      const err = toServiceError(thrown);
      const message = err.expose ? err.message : GENERIC_5XX;
      if (err.status === 503) {
        logger.warn(
          { reqId: ctx.state.requestId, err: err.cause ?? err, code: err.code, path: ctx.path },
          'request outcome unknown; answered 503',
        );
      } else if (err.status >= 500) {
        logger.error({ reqId: ctx.state.requestId, err: err.cause ?? err, code: err.code, path: ctx.path }, 'request failed');
      }
      ctx.status = err.status;
      if (err.status === 401) ctx.set('WWW-Authenticate', 'Bearer');
      if (err.retryAfterS !== undefined) ctx.set('Retry-After', String(err.retryAfterS));
      if (ctx.state.errorStyle === 'page') {
        ctx.type = 'text/html; charset=utf-8';
        ctx.body = errorPage(err.status, message);
        return;
      }
      ctx.body =
        ctx.state.errorStyle === 'whitelist'
          ? { error: STATUS_CODES[err.status] ?? 'Error', errorMessage: message }
          : { error: message, code: err.code };
    }
  };
}
