import { IntentServiceError, parseRetryAfter } from './errors.js';

/** Options every call takes. */
export interface CallOptions {
  /** Aborts the call (and its waits between attempts); the call rejects with the signal's reason. */
  signal?: AbortSignal;
  /** How long the call may take, retries included, in ms (default: the client's `deadlineMs`). */
  deadlineMs?: number;
}

export interface Attempt {
  /** Retry a 503 or 429 with Retry-After and a network failure until the deadline. */
  retry: boolean;
  deadline: number;
  signal?: AbortSignal;
  /** The client's pace, shared by its calls: no request leaves before `notBefore` (ms since the epoch). */
  pace?: Pace;
}

/** When a client may send its next request: set by a RateLimit field with nothing left, or a 429's Retry-After. */
export interface Pace {
  notBefore: number;
}

/**
 * The seconds to wait that a `RateLimit` field (draft-ietf-httpapi-ratelimit-headers-11:
 * `"<policy>";r=<left>;t=<seconds>`, items comma-separated) asks for: the longest `t` of a policy
 * with nothing left (`r=0`); 0 when every policy has some left, or the field is absent or unreadable.
 */
export function rateLimitWait(field: string | null): number {
  if (field === null) return 0;
  let wait = 0;
  for (const item of field.split(',')) {
    const left = /;\s*r=(\d+)/.exec(item);
    const reset = /;\s*t=(\d+)/.exec(item);
    if (left && Number(left[1]) === 0 && reset) wait = Math.max(wait, Number(reset[1]));
  }
  return wait;
}

/** Backoff between attempts after a network failure: 250 ms doubling to 4 s. */
const networkBackoffMs = (attempt: number) => Math.min(4000, 250 * 2 ** attempt);

/** Waits `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * One fetch whose wait for an answer ends at the deadline; once answered, only the caller's signal
 * aborts it (an event stream outlives the deadline of its opening).
 */
async function fetchBy(fetchFn: typeof fetch, url: string, init: RequestInit, deadline: number, signal?: AbortSignal): Promise<Response> {
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(new DOMException('deadline passed', 'TimeoutError')), Math.max(1, deadline - Date.now()));
  try {
    return await fetchFn(url, { ...init, signal: signal ? AbortSignal.any([signal, timeout.signal]) : timeout.signal });
  } finally {
    clearTimeout(timer);
  }
}

/** The answer's error as an IntentServiceError (the body's `error` when it is JSON with one). */
export async function errorOf(response: Response): Promise<IntentServiceError> {
  let text = response.statusText || `HTTP ${response.status}`;
  try {
    const body = (await response.json()) as { error?: unknown };
    if (typeof body?.error === 'string') text = body.error;
  } catch {
    // not JSON: the status text stands
  }
  return new IntentServiceError(response.status, text, { retryAfter: parseRetryAfter(response.headers.get('retry-after')) });
}

/**
 * Sends `make()`'s request until it is answered with something other than a 503 or 429 carrying
 * Retry-After, or the deadline leaves no time for the wait (a 429, and a RateLimit field with
 * nothing left, also hold back the client's other calls until then: `attempt.pace`); network failures are retried the same
 * way. Answers the successful Response; throws IntentServiceError for an error status.
 */
export async function send(fetchFn: typeof fetch, url: string, init: RequestInit, attempt: Attempt): Promise<Response> {
  for (let n = 0; ; n++) {
    if (attempt.signal?.aborted) throw attempt.signal.reason;
    const paced = (attempt.pace?.notBefore ?? 0) - Date.now();
    if (paced > 0) {
      if (Date.now() + paced >= attempt.deadline)
        throw new IntentServiceError(429, `rate limited for ${Math.ceil(paced / 1000)} s more: past the deadline`, {
          retryAfter: Math.ceil(paced / 1000),
        });
      await sleep(paced, attempt.signal);
    }
    let response: Response;
    try {
      response = await fetchBy(fetchFn, url, init, attempt.deadline, attempt.signal);
    } catch (err) {
      if (attempt.signal?.aborted) throw attempt.signal.reason;
      const wait = networkBackoffMs(n);
      if (Date.now() >= attempt.deadline) throw new IntentServiceError(0, 'no answer within the deadline', { cause: err });
      if (!attempt.retry || Date.now() + wait >= attempt.deadline)
        throw new IntentServiceError(0, `no answer: ${(err as Error).message}`, { cause: err });
      await sleep(wait, attempt.signal);
      continue;
    }
    // The service says how much of its limit is left: with nothing left, every call of this client waits for the reset.
    const limited = rateLimitWait(response.headers.get('ratelimit'));
    if (limited > 0 && attempt.pace) attempt.pace.notBefore = Math.max(attempt.pace.notBefore, Date.now() + limited * 1000);
    if (response.ok || response.status === 204) return response;
    const error = await errorOf(response);
    const waitMs = Math.max(100, (error.retryAfter ?? 0) * 1000);
    if (response.status === 429 && attempt.pace && error.retryAfter !== undefined)
      attempt.pace.notBefore = Math.max(attempt.pace.notBefore, Date.now() + waitMs);
    const canWait = error.retryAfter !== undefined && Date.now() + waitMs < attempt.deadline;
    if (!(attempt.retry && (response.status === 503 || response.status === 429) && canWait)) throw error;
    // A 429's wait is the pace's, which the next attempt honours.
    if (response.status === 503 || !attempt.pace) await sleep(waitMs, attempt.signal);
  }
}
