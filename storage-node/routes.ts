import type { IncomingMessage, ServerResponse } from 'node:http';
import { badRequest, conflict, notFound, ServiceError } from '../domain/errors';
import { parseJson, readBody, sendError, sendJson, sendText } from './http-io';
import { isWhitelistKind, MAX_BODY_BYTES, MAX_ENTRY_LENGTH, ROUTES, type FaultSettings } from './protocol';
import { parseApplyRequest, parseAuditQuery, parseFaultUpdate, parseListQuery } from './validate';
import type { WhitelistStore } from './whitelist-store';

export interface RouteDeps {
  store: WhitelistStore;
  /** Current fault settings; mutated in place by `POST /v1/faults`. */
  faults: FaultSettings;
  enableFaultApi: boolean;
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
async function answerApply(req: IncomingMessage, res: ServerResponse, deps: RouteDeps): Promise<Send> {
  const body = await readBody(req, MAX_BODY_BYTES);
  if (deps.faults.fault === 'http500') return () => sendJson(res, 500, { error: 'Internal Server Error' });
  if (deps.faults.fault === 'garbage') return () => sendText(res, 200, GARBAGE_BODY);
  if (deps.faults.fault === 'wrong-shape') return () => sendJson(res, 200, { ok: true });
  const request = parseApplyRequest(parseJson(body));
  const outcome = deps.store.apply(request);
  if (outcome.type === 'conflict') {
    throw conflict(`batchId ${JSON.stringify(request.batchId)} was already applied with different changes`);
  }
  // `truncated` stands for a node that applied the batch and died mid-answer: the caller cannot
  // know whether it applied.
  if (deps.faults.fault === 'truncated') return () => sendTruncated(res, JSON.stringify(outcome.response));
  return () => sendJson(res, 200, outcome.response);
}

// The delay comes after the durable apply, so a slow node is late but not lossy: the change is
// on disk even if the caller gave up waiting.
async function handleApply(req: IncomingMessage, res: ServerResponse, deps: RouteDeps): Promise<void> {
  requireMethod(req, res, 'POST');
  let send: Send;
  try {
    send = await answerApply(req, res, deps);
  } catch (err) {
    send = () => sendError(res, err, deps.onError);
  }
  if (deps.faults.delayMs > 0) await deps.pause(deps.faults.delayMs);
  send();
}

async function handleFaults(req: IncomingMessage, res: ServerResponse, deps: RouteDeps): Promise<void> {
  if (req.method === 'GET') {
    sendJson(res, 200, deps.faults);
    return;
  }
  requireMethod(req, res, 'POST');
  const update = parseFaultUpdate(parseJson(await readBody(req, MAX_BODY_BYTES)), deps.faults);
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

async function route(req: IncomingMessage, res: ServerResponse, deps: RouteDeps): Promise<void> {
  const { pathname, searchParams } = new URL(req.url ?? '/', 'http://storage-node');
  if (pathname === ROUTES.health) {
    requireMethod(req, res, 'GET');
    sendJson(res, 200, { ok: true });
  } else if (pathname === ROUTES.apply) {
    await handleApply(req, res, deps);
  } else if (pathname === ROUTES.faults && deps.enableFaultApi) {
    await handleFaults(req, res, deps);
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
