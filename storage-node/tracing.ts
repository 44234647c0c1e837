import type { IncomingMessage, ServerResponse } from 'node:http';
import { ROUTES } from '../contracts/storage-node-protocol';
import { carriesTrace, endHttpSpan, inContext, setServerRoute, startServerSpan } from '../lib/tracing';

/** A request path's route template (low cardinality, as span names must be). */
function routeOf(path: string): string {
  if (path === ROUTES.apply || path === ROUTES.audit || path === ROUTES.health) return path;
  if (path.startsWith(ROUTES.listPrefix))
    return path.split('/').length > 4 ? `${ROUTES.listPrefix}{kind}/{entry}` : `${ROUTES.listPrefix}{kind}`;
  return path;
}

/**
 * Wraps the node's handler in a SERVER span per request that carries a `traceparent` header,
 * continuing the service's trace; the span ends when the answer is sent (a test build's delayed answer
 * included) or the connection closes first (an error span).
 */
export function tracedHandler(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    // A request that carries no trace (a probe, a tool) starts none here.
    if (!carriesTrace(req.headers)) return handler(req, res);
    const method = req.method ?? 'GET';
    const path = (req.url ?? '/').split('?')[0];
    const { span, context } = startServerSpan(method, path, req.headers);
    setServerRoute(span, method, routeOf(path));
    res.once('close', () =>
      endHttpSpan(
        span,
        'server',
        res.writableFinished ? res.statusCode : Object.assign(new Error('closed before the answer'), { name: 'ConnectionClosed' }),
      ),
    );
    inContext(context, () => handler(req, res));
  };
}
