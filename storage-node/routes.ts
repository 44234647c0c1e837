import type { IncomingMessage, ServerResponse } from 'node:http';
import { badRequest, notFound, ServiceError, unauthorized } from '../domain/errors';
import { parseJson, readBody, sendError, sendJson, sendText } from './http-io';
import { isWhitelistKind, MAX_BODY_BYTES, MAX_ENTRY_LENGTH, ROUTES, type FaultSettings } from '../contracts/storage-node-protocol';
import type { RequestVerifier } from '../lib/node-request-auth';
import { parseApplyRequest, parseAuditQuery, parseFaultUpdate, parseListQuery } from './validate';
import type { NodeStore } from './node-store';

export interface RouteDeps {
  store: NodeStore;
  /** Current fault settings; mutated in place by `POST /v1/faults`. */
  faults: FaultSettings;
  enableFaultApi: boolean;
  /** Checks that each request was signed by this deployment's service. */
  verifier: RequestVerifier;
  /** Told of each refused request (the server logs them at a bounded rate). */
  onRefused: (reason: string) => void;
  /** Waits before an apply answer; the server makes it cancellable on close. */
  pause: (ms: number) => Promise<void>;
  onError: (err: Error) => void;
}

/** The exact body of the `garbage` fault. */
export const GARBAGE_BODY = 'this is not json';

type Send = () => void;

function sendTruncated(res: ServerResponse, text: string): void {
  const bytes = Buffer.from(text);
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(bytes.length) });
  res.write(bytes.subarray(0, Math.floor(bytes.length / 2)));
  // Let the half body reach the client before the connection is torn down.
  setTimeout(() => res.destroy(), 20);
}

const methodNotAllowed = (allowed: string) => new ServiceError(405, 'METHOD_NOT_ALLOWED', `method not allowed; use ${allowed}`);

function requireMethod(req: IncomingMessage, res: ServerResponse, allowed: string): void {
  if (req.method === allowed) return;
  res.setHeader('allow', allowed);
  throw methodNotAllowed(allowed);
}

// Injected faults answer before the body is even parsed: they stand for a node that is broken,
// not for one that judged the request.
function answerApply(res: ServerResponse, deps: RouteDeps, body: Buffer): Send {
  if (deps.faults.fault === 'http500') return () => sendJson(res, 500, { error: 'Internal Server Error' });
  if (deps.faults.fault === 'garbage') return () => sendText(res, 200, GARBAGE_BODY);
  if (deps.faults.fault === 'wrong-shape') return () => sendJson(res, 200, { ok: true });
  const response = deps.store.apply(parseApplyRequest(parseJson(body)));
  if (deps.faults.fault === 'truncated') return () => sendTruncated(res, JSON.stringify(response));
  return () => sendJson(res, 200, response);
}

// The delay comes after the durable apply, so a slow node is late but not lossy: the change is
// on disk even if the caller gave up waiting.
async function handleApply(req: IncomingMessage, res: ServerResponse, deps: RouteDeps, body: Buffer): Promise<void> {
  requireMethod(req, res, 'POST');
  let send: Send;
  try {
    send = answerApply(res, deps, body);
  } catch (err) {
    send = () => sendError(res, err, deps.onError);
  }
  if (deps.faults.delayMs > 0) await deps.pause(deps.faults.delayMs);
  send();
}

function handleFaults(req: IncomingMessage, res: ServerResponse, deps: RouteDeps, body: Buffer): void {
  if (req.method === 'GET') {
    sendJson(res, 200, deps.faults);
    return;
  }
  requireMethod(req, res, 'POST');
  const update = parseFaultUpdate(parseJson(body), deps.faults);
  Object.assign(deps.faults, update);
  sendJson(res, 200, deps.faults);
}

/** `GET /v1/whitelists/{kind}` (a page of entries) and `GET /v1/whitelists/{kind}/{entry}` (one entry). */
function handleRead(req: IncomingMessage, res: ServerResponse, deps: RouteDeps, rest: string, query: URLSearchParams): void {
  const parts = rest.split('/');
  const kind = parts[0];
  if (parts.length > 2 || !isWhitelistKind(kind)) throw notFound(`no route ${req.method ?? ''} ${ROUTES.listPrefix}${rest}`);
  requireMethod(req, res, 'GET');
  if (parts.length === 1) {
    const { after, limit } = parseListQuery(query);
    sendJson(res, 200, deps.store.listPage(kind, after, limit));
    return;
  }
  let entry: string;
  try {
    entry = decodeURIComponent(parts[1]);
  } catch {
    throw badRequest('entry is not valid percent-encoding');
  }
  if (entry.length === 0 || entry.length > MAX_ENTRY_LENGTH) throw badRequest(`entry must be 1..${MAX_ENTRY_LENGTH} characters`);
  sendJson(res, 200, { kind, entry, listed: deps.store.has(kind, entry) });
}

/**
 * The one gate of every route: the body is read (bounded) and the request's signature checked
 * over it before anything is parsed, routed or applied. Before the route too, so that an unsigned
 * caller learns nothing, not even which paths exist.
 */
async function authenticatedBody(req: IncomingMessage, deps: RouteDeps): Promise<Buffer> {
  const body = await readBody(req, MAX_BODY_BYTES);
  const outcome = deps.verifier.verify({ method: req.method ?? '', target: req.url ?? '', headers: req.headers, body });
  if (outcome.ok) return body;
  deps.onRefused(outcome.reason);
  if (outcome.status === 503) throw new ServiceError(503, 'UNAVAILABLE', outcome.reason, { expose: true });
  throw unauthorized(outcome.reason);
}

async function route(req: IncomingMessage, res: ServerResponse, deps: RouteDeps): Promise<void> {
  const body = await authenticatedBody(req, deps);
  const { pathname, searchParams } = new URL(req.url ?? '/', 'http://storage-node');
  if (pathname === ROUTES.health) {
    requireMethod(req, res, 'GET');
    sendJson(res, 200, { ok: true });
  } else if (pathname === ROUTES.apply) {
    await handleApply(req, res, deps, body);
  } else if (pathname === ROUTES.faults && deps.enableFaultApi) {
    handleFaults(req, res, deps, body);
  } else if (pathname === ROUTES.audit) {
    requireMethod(req, res, 'GET');
    sendJson(res, 200, deps.store.auditPage(parseAuditQuery(searchParams)));
  } else if (pathname.startsWith(ROUTES.listPrefix)) {
    handleRead(req, res, deps, pathname.slice(ROUTES.listPrefix.length), searchParams);
  } else {
    throw notFound(`no route ${req.method ?? ''} ${pathname}`);
  }
}

/**
 * Builds the node's request handler (no port bound, so tests can drive it directly). Every
 * failure is rendered once as `{ "error": ... }`.
 */
export function createRequestHandler(deps: RouteDeps): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    route(req, res, deps).catch((err: unknown) => sendError(res, err, deps.onError));
  };
}
