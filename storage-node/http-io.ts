import type { IncomingMessage, ServerResponse } from 'node:http';
import { badRequest, ServiceError } from '../domain/errors';

/**
 * How much of an oversized (or refused) body is still read and discarded, never buffered, before
 * the answer ends the connection. A client that is still writing when the server answers and
 * closes sees a reset instead of the answer, so a moderately oversized body is drained; beyond
 * this the connection is cut. The node's request timeout bounds how long a drain may take.
 */
const DRAIN_FACTOR = 16;

const tooLarge = (limit: number) => new ServiceError(413, 'PAYLOAD_TOO_LARGE', `body exceeds ${limit} bytes`);

/** The body length a request declares (0 without a Content-Length). */
const declaredLength = (req: IncomingMessage): number => Number(req.headers['content-length'] ?? 0);

/**
 * Throws a 413 when the request declares a body over `limit`, before any of it is read.
 */
export function refuseDeclaredOversize(req: IncomingMessage, limit: number): void {
  if (declaredLength(req) > limit) throw tooLarge(limit);
}

/**
 * Prepares an answer sent before the body was read (a refusal). Node discards an unread body once
 * the answer is sent, as it arrives, so a declared body up to `limit * DRAIN_FACTOR` keeps the
 * connection and the client reads the answer; a larger one, or one of undeclared length
 * (chunked), ends the connection with the answer.
 */
export function answeringBeforeBody(req: IncomingMessage, res: ServerResponse, limit: number): void {
  const undeclared = req.headers['transfer-encoding'] !== undefined;
  res.setHeader('connection', undeclared || declaredLength(req) > limit * DRAIN_FACTOR ? 'close' : 'keep-alive');
}

/**
 * The peer closed its connection (or the node's request timeout closed it) before its body was
 * read: there is nobody to answer and nothing went wrong in the node, so it is neither answered
 * nor reported as an error.
 */
export class PeerGone extends Error {
  constructor() {
    super('the peer closed the connection before its body was read');
  }
}

/**
 * Reads a request body of at most `limit` bytes. A larger body rejects with a 413
 * `ServiceError` without being buffered: once fully drained, or at once when it passes
 * `limit * DRAIN_FACTOR` bytes (declared or received).
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const drainCap = limit * DRAIN_FACTOR;
  return new Promise((resolve, reject) => {
    if (declaredLength(req) > drainCap) {
      reject(tooLarge(limit));
      return;
    }
    const chunks: Buffer[] = [];
    let received = 0;
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received <= limit) {
        chunks.push(chunk);
        return;
      }
      chunks.length = 0;
      if (received > drainCap) {
        req.off('data', onData);
        reject(tooLarge(limit));
      }
    };
    req.on('data', onData);
    req.once('end', () => (received > limit ? reject(tooLarge(limit)) : resolve(Buffer.concat(chunks))));
    req.once('error', () => reject(new PeerGone()));
  });
}

/** Parses a JSON body; an empty or malformed one is a 400. */
export function parseJson(body: Buffer): unknown {
  if (body.length === 0) throw badRequest('body is empty');
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw badRequest('body is not valid JSON');
  }
}

/** Sends a JSON answer. */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const data = Buffer.from(JSON.stringify(body));
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': data.length, ...headers });
  res.end(data);
}

/** Sends a raw text answer (used only by the `garbage` fault, which must not be JSON). */
export function sendText(res: ServerResponse, status: number, text: string): void {
  const data = Buffer.from(text);
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': data.length });
  res.end(data);
}

/**
 * Renders any thrown value as `{ "error": ... }`. Only exposed `ServiceError` messages reach the
 * client; anything else is a 500 with a fixed text, and is reported through `onError`.
 */
export function sendError(res: ServerResponse, err: unknown, onError: (err: Error) => void): void {
  if (res.headersSent) {
    onError(err instanceof Error ? err : new Error(String(err)));
    res.destroy();
    return;
  }
  if (err instanceof ServiceError && err.expose) {
    // A 413 may come before the body was fully read; closing the connection ends that body
    // instead of reading on through it for a next request (unless answeringBeforeBody chose).
    const headers: Record<string, string> = err.status === 413 && !res.hasHeader('connection') ? { connection: 'close' } : {};
    sendJson(res, err.status, { error: err.message }, headers);
    return;
  }
  onError(err instanceof Error ? err : new Error(String(err)));
  sendJson(res, err instanceof ServiceError ? err.status : 500, { error: 'Internal Server Error' });
}
