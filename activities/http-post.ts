import http from 'node:http';
import https from 'node:https';

// A JSON POST on node:http with keep-alive connections, for the storage nodes' apply route. It
// replaced `fetch` there (issue 17): three requests per batch cost 2-3 ms of CPU with fetch and
// AbortSignal.any against 0.7-1.2 ms this way (scratch benchmark, client and server together),
// on the worker's main thread, which also runs the SDK's activation plumbing.

/** The answer's status and body text. */
export interface PostAnswer {
  status: number;
  text: string;
}

/** A node may not answer with more than this (an apply answer of 100 changes is ~15 KB). */
export const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

/** The name of the error postJson rejects with when an answer passes MAX_ANSWER_BYTES. */
export const ANSWER_TOO_LARGE = 'AnswerTooLarge';

/** Each protocol's request function and its keep-alive agent. */
const TRANSPORTS = {
  'http:': { request: http.request, agent: new http.Agent({ keepAlive: true }) },
  'https:': { request: https.request, agent: new https.Agent({ keepAlive: true }) },
};

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
 * POSTs `body` (JSON text) to `url`; resolves with the answer once it has been read whole. Rejects
 * with a `TimeoutError` when the whole exchange takes longer than `timeoutMs`, an `AbortError`
 * when `signal` aborts, an ANSWER_TOO_LARGE error past MAX_ANSWER_BYTES, or the socket's
 * error (`code` ECONNREFUSED, ECONNRESET, …).
 */
export function postJson(url: string, body: string, options: { timeoutMs: number; signal?: AbortSignal }): Promise<PostAnswer> {
  return new Promise((resolve, reject) => {
    const { signal } = options;
    if (signal?.aborted) return reject(named('AbortError', 'the request was aborted'));
    const target = new URL(url);
    const transport = TRANSPORTS[target.protocol as keyof typeof TRANSPORTS];
    if (!transport) return reject(new Error(`${url}: not an http(s) URL`));
    const request = transport.request(target, {
      method: 'POST',
      agent: transport.agent,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
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
