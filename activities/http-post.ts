import http from 'node:http';
import https from 'node:https';
import type { Attributes } from '@opentelemetry/api';
import { endHttpSpan, inTrace, startClientSpan } from '../lib/tracing';
import type { NodeTransport } from './node-transport';

// A JSON request on node:http with keep-alive connections, for the storage nodes' routes. It
// replaced `fetch` for the apply route: three requests per batch cost 2-3 ms of CPU with fetch and
// AbortSignal.any against 0.7-1.2 ms this way (scratch benchmark, client and server together), on
// the worker's main thread, which also runs the SDK's activation plumbing. The API's reads and
// probes use it too, so that one place signs every request and trusts the nodes' CA.

/** The answer's status and body text. */
export interface PostAnswer {
  status: number;
  text: string;
}

/** A node may not answer with more than this (an apply answer of 100 changes is ~15 KB). */
export const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

/** The name of the error postJson rejects with when an answer passes MAX_ANSWER_BYTES. */
export const ANSWER_TOO_LARGE = 'AnswerTooLarge';

const REQUEST_FUNCTIONS: Record<string, typeof http.request> = { 'http:': http.request, 'https:': https.request };

export interface RequestOptions {
  timeoutMs: number;
  signal?: AbortSignal;
  /** Signs the request and holds the connections (activities/node-transport.ts). */
  transport: NodeTransport;
  /** More attributes of the request's CLIENT span when the process traces (a batch id). */
  spanAttributes?: Attributes;
}

/**
 * An error with a name (the DOM's `TimeoutError` and `AbortError`, or ANSWER_TOO_LARGE), so that
 * callers can tell those from a socket error (which has a `code`).
 */
function named(name: 'TimeoutError' | 'AbortError' | typeof ANSWER_TOO_LARGE, message: string): Error {
  const err = new Error(message);
  err.name = name;
  return err;
}

/**
 * POSTs `body` (JSON text) to `url`, signed; resolves with the answer once it has been read whole.
 * Rejects as `requestNode` does.
 */
export function postJson(url: string, body: string, options: RequestOptions): Promise<PostAnswer> {
  return requestNode('POST', url, body, options);
}

/** GETs `url`, signed; resolves and rejects as `requestNode` does. */
export function getJson(url: string, options: RequestOptions): Promise<PostAnswer> {
  return requestNode('GET', url, undefined, options);
}

/**
 * Sends one signed request to a storage node and reads the whole answer. Rejects with a
 * `TimeoutError` when the whole exchange takes longer than `timeoutMs`, an `AbortError` when
 * `signal` aborts, an ANSWER_TOO_LARGE error past MAX_ANSWER_BYTES, or the socket's error (`code`
 * ECONNREFUSED, ECONNRESET, …; a TLS failure is its own code, e.g. UNABLE_TO_VERIFY_LEAF_SIGNATURE).
 */
export function requestNode(method: 'GET' | 'POST', url: string, body: string | undefined, options: RequestOptions): Promise<PostAnswer> {
  if (!inTrace()) return sendToNode(method, url, body, options);
  // A CLIENT span whose context the node continues from the `traceparent` header (outside the signed part).
  const { span, headers } = startClientSpan(method, new URL(url), options.spanAttributes);
  return sendToNode(method, url, body, options, headers).then(
    (answer) => {
      endHttpSpan(span, 'client', answer.status);
      return answer;
    },
    (err: Error) => {
      endHttpSpan(span, 'client', err);
      throw err;
    },
  );
}

function sendToNode(
  method: 'GET' | 'POST',
  url: string,
  body: string | undefined,
  options: RequestOptions,
  traceHeaders?: Record<string, string>,
): Promise<PostAnswer> {
  return new Promise((resolve, reject) => {
    const { signal } = options;
    if (signal?.aborted) return reject(named('AbortError', 'the request was aborted'));
    const target = new URL(url);
    const send = REQUEST_FUNCTIONS[target.protocol];
    const agent = options.transport.agent(target.protocol);
    if (!send || !agent) return reject(new Error(`${url}: not an http(s) URL`));
    const signature = options.transport.sign(method, target, body ?? '');
    const headers: Record<string, string | number> =
      body === undefined ? signature : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...signature };
    if (traceHeaders) Object.assign(headers, traceHeaders);
    const request = send(target, { method, agent, headers });
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      outcome();
    };
    const fail = (err: Error) => {
      request.destroy();
      settle(() => reject(err));
    };
    const onAbort = () => fail(named('AbortError', 'the request was aborted'));
    const timer = setTimeout(() => fail(named('TimeoutError', `no answer within ${options.timeoutMs} ms`)), options.timeoutMs);
    signal?.addEventListener('abort', onAbort, { once: true });
    request.on('error', fail);
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      let size = 0;
      response.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size <= MAX_ANSWER_BYTES) return void chunks.push(chunk);
        fail(named(ANSWER_TOO_LARGE, `answer longer than ${MAX_ANSWER_BYTES} bytes`));
      });
      response.on('error', fail);
      response.on('end', () => settle(() => resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') })));
      // Closed before its end: the node or the connection cut the answer short.
      response.on('close', () => {
        if (!response.complete) fail(Object.assign(new Error('the answer was cut short'), { code: 'ECONNRESET' }));
      });
    });
    request.end(body);
  });
}
