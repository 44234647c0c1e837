import type { IncomingMessage, ServerResponse } from 'node:http';
import { badRequest, notFound, ServiceError, unauthorized } from '../domain/errors';
import { PeerGone, answeringBeforeBody, parseJson, readBody, refuseDeclaredOversize, sendError, sendJson } from './http-io';
import { isWhitelistKind, MAX_BODY_BYTES, MAX_ENTRY_LENGTH, ROUTES, type ApplyResponse } from '../contracts/storage-node-protocol';
import type { AuthOutcome, RequestVerifier } from '../lib/node-request-auth';
import { parseApplyRequest, parseAuditQuery, parseListQuery, parseMembershipQuery, parseRepairRequest } from './validate';
import type { NodeStore } from './node-store';
import { annotateActiveSpan } from '../lib/tracing';

export interface RouteDeps {
  store: NodeStore;
  /** Answers the apply route: `answerApplyNow`, or a test build's (test/support/faulty-storage-node.ts). */
  answerApply: ApplyHandler;
  /** A route a test build adds (behind the same signature check); true when it answered. */
  extraRoute?: ExtraRoute;
  /** Checks that each request was signed by this deployment's service. */
  verifier: RequestVerifier;
  /** Told of each refused request, with its status (401 or 503: the replay memory is full); the server logs them at a bounded rate. */
  onRefused: (reason: string, status: 401 | 503) => void;
  /** Waits; the server makes it cancellable on close (for a test build's delayed answers). */
  pause: (ms: number) => Promise<void>;
  onError: (err: Error) => void;
}

/** One apply request, authenticated, as its answerer sees it. */
export interface ApplyExchange {
  res: ServerResponse;
  /** Applies the body durably and returns the answer; throws a ServiceError for a bad body. */
  apply: () => ApplyResponse;
  /** Sends an answer or an error as the node does. */
  send: (answer: ApplyResponse) => void;
  sendError: (err: unknown) => void;
  /** The server's cancellable wait. */
  pause: (ms: number) => Promise<void>;
}

export type ApplyHandler = (exchange: ApplyExchange) => void | Promise<void>;
export type ExtraRoute = (pathname: string, req: IncomingMessage, res: ServerResponse, body: Buffer) => boolean;

/** The node's own answer: apply, then answer at once. */
export const answerApplyNow: ApplyHandler = ({ apply, send, sendError: fail }) => {
  let answer: ApplyResponse;
  try {
    answer = apply();
  } catch (err) {
    fail(err);
    return;
  }
  send(answer);
};

const methodNotAllowed = (allowed: string) => new ServiceError(405, 'METHOD_NOT_ALLOWED', `method not allowed; use ${allowed}`);

function requireMethod(req: IncomingMessage, res: ServerResponse, allowed: string): void {
  if (req.method === allowed) return;
  res.setHeader('allow', allowed);
  throw methodNotAllowed(allowed);
}

async function handleApply(req: IncomingMessage, res: ServerResponse, deps: RouteDeps, body: Buffer): Promise<void> {
  requireMethod(req, res, 'POST');
  await deps.answerApply({
    res,
    apply: () => {
      const request = parseApplyRequest(parseJson(body));
      annotateActiveSpan({ 'intent_service.batch_id': request.batchId });
      return deps.store.apply(request);
    },
    send: (answer) => sendJson(res, 200, answer),
    sendError: (err) => sendError(res, err, deps.onError),
    pause: deps.pause,
  });
}

/** `GET /v1/whitelists/{kind}` (a page of entries) and `GET /v1/whitelists/{kind}/{entry}` (one entry). */
function handleRead(req: IncomingMessage, res: ServerResponse, deps: RouteDeps, rest: string, query: URLSearchParams): void {
  const parts = rest.split('/');
  const kind = parts[0];
  if (parts.length > 2 || !isWhitelistKind(kind)) throw notFound(`no route ${req.method ?? ''} ${ROUTES.listPrefix}${rest}`);
  requireMethod(req, res, 'GET');
  if (parts.length === 1) {
    const { after, limit, histories } = parseListQuery(query);
    sendJson(res, 200, histories ? deps.store.historyPage(kind, after, limit) : deps.store.listPage(kind, after, limit));
    return;
  }
  let entry: string;
  try {
    entry = decodeURIComponent(parts[1]);
  } catch {
    throw badRequest('entry is not valid percent-encoding');
  }
  if (entry.length === 0 || entry.length > MAX_ENTRY_LENGTH) throw badRequest(`entry must be 1..${MAX_ENTRY_LENGTH} characters`);
  const { history } = parseMembershipQuery(query);
  sendJson(res, 200, {
    kind,
    entry,
    listed: deps.store.has(kind, entry),
    ...(history ? { history: deps.store.history(kind, entry), replica: deps.store.replica() } : {}),
  });
}

/** The error a refused request is answered with; the refusal is told to `onRefused` (logged at a bounded rate). */
function refusal(outcome: Exclude<AuthOutcome, { ok: true }>, deps: RouteDeps): ServiceError {
  deps.onRefused(outcome.reason, outcome.status);
  if (outcome.status === 503) return new ServiceError(503, 'UNAVAILABLE', outcome.reason, { expose: true });
  return unauthorized(outcome.reason);
}

/**
 * The one gate of every route, before anything is parsed, routed or applied; before the route
 * too, so that an unsigned caller learns nothing, not even which paths exist. First what needs no
 * body (the signature headers, this node, the clock, the declared length), so that a request that
 * cannot verify costs no buffered body; then the body is read (bounded) and the signature checked over it.
 */
async function authenticatedBody(req: IncomingMessage, res: ServerResponse, deps: RouteDeps): Promise<Buffer> {
  const early = deps.verifier.checkHeaders(req.headers);
  try {
    if (!early.ok) throw refusal(early, deps);
    refuseDeclaredOversize(req, MAX_BODY_BYTES);
  } catch (err) {
    answeringBeforeBody(req, res, MAX_BODY_BYTES);
    throw err;
  }
  const body = await readBody(req, MAX_BODY_BYTES);
  const outcome = deps.verifier.verify({ method: req.method ?? '', target: req.url ?? '', headers: req.headers, body });
  if (outcome.ok) return body;
  throw refusal(outcome, deps);
}

async function route(req: IncomingMessage, res: ServerResponse, deps: RouteDeps): Promise<void> {
  const body = await authenticatedBody(req, res, deps);
  const { pathname, searchParams } = new URL(req.url ?? '/', 'http://storage-node');
  if (pathname === ROUTES.health) {
    requireMethod(req, res, 'GET');
    sendJson(res, 200, { ok: true });
  } else if (pathname === ROUTES.apply) {
    await handleApply(req, res, deps, body);
  } else if (pathname === ROUTES.repair) {
    requireMethod(req, res, 'POST');
    const { entries, refilled } = parseRepairRequest(parseJson(body));
    const answer = deps.store.repair(entries);
    if (refilled !== undefined) deps.store.markRefilled(refilled);
    sendJson(res, 200, answer);
  } else if (deps.extraRoute?.(pathname, req, res, body)) {
    return;
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
    route(req, res, deps).catch((err: unknown) => (err instanceof PeerGone ? res.destroy() : sendError(res, err, deps.onError)));
  };
}
