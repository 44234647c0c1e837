import http from 'node:http';
import { createInterface } from 'node:readline';
import { readAnswer } from '../read-answer';

/** One request of a load run: what to send, and the label its figures are kept under. */
export interface LoadRequest {
  kind: string;
  method: 'GET' | 'POST';
  path: string;
  headers?: Record<string, string>;
  body?: unknown;
}

export interface LoadResult<T extends LoadRequest = LoadRequest> {
  request: T;
  status: number;
  body: any;
  ms: number;
  /** Set when no HTTP answer came back (connection refused or reset, timeout). */
  error?: string;
  /** The Retry-After header of a 429 or 503. */
  retryAfter?: string;
  /** How many 503s this request got before its answer (open loop only: it retries them). */
  unavailable?: number;
}

/**
 * A small closed-loop load client for loopback tests: `concurrency` clients each take the next
 * request from one queue, send it over a keep-alive connection of their own and wait for the
 * answer, until the queue is empty. Every request is sent once (no retries), so every outcome counts.
 */
export async function runLoad<T extends LoadRequest>(
  baseUrl: string,
  requests: readonly T[],
  concurrency: number,
  timeoutMs = 90_000,
): Promise<{ results: LoadResult<T>[]; seconds: number }> {
  const url = new URL(baseUrl);
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname))
    throw new Error(`the load client is for loopback only, not ${url.hostname}`);
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const results: LoadResult<T>[] = new Array(requests.length);
  let next = 0;
  const started = process.hrtime.bigint();
  const client = async () => {
    while (next < requests.length) {
      const index = next++;
      results[index] = await send(agent, url, requests[index], timeoutMs);
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(concurrency, requests.length) }, client));
  } finally {
    agent.destroy();
  }
  return { results, seconds: Number(process.hrtime.bigint() - started) / 1e9 };
}

function send<T extends LoadRequest>(agent: http.Agent, base: URL, request: T, timeoutMs: number): Promise<LoadResult<T>> {
  const payload = request.body === undefined ? undefined : Buffer.from(JSON.stringify(request.body));
  const started = process.hrtime.bigint();
  const elapsed = () => Number(process.hrtime.bigint() - started) / 1e6;
  return new Promise((resolve) => {
    const req = http.request(
      {
        agent,
        host: base.hostname.replace(/^\[|\]$/g, ''),
        port: base.port,
        method: request.method,
        path: request.path,
        headers: {
          ...(payload ? { 'content-type': 'application/json', 'content-length': String(payload.length) } : {}),
          ...(request.headers ?? {}),
        },
        timeout: timeoutMs,
      },
      (res) =>
        void readAnswer(res).then(
          (body) => {
            const retryAfter = res.headers['retry-after'];
            resolve({ request, status: res.statusCode ?? 0, body, ms: elapsed(), ...(retryAfter === undefined ? {} : { retryAfter }) });
          },
          (err: Error) => resolve({ request, status: 0, body: undefined, ms: elapsed(), error: err.message }),
        ),
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (err) => resolve({ request, status: 0, body: undefined, ms: elapsed(), error: err.message }));
    req.end(payload);
  });
}

/**
 * An open-loop run: request i leaves at i / `perSecond` seconds whatever the answers before it,
 * as independent clients do, so a rate above what the service can serve really overloads it.
 * A 503 is what the API says when an outcome is unknown ("the same request may be retried
 * safely"): each is sent again after its Retry-After, up to `maxAttempts` in all, as a client
 * would; `ms` then spans the first send to the last answer, and `unavailable` counts the 503s.
 */
export async function runOpenLoop<T extends LoadRequest>(
  baseUrl: string,
  requests: readonly T[],
  perSecond: number,
  maxAttempts = 30,
  timeoutMs = 90_000,
): Promise<{ results: LoadResult<T>[]; seconds: number }> {
  const url = new URL(baseUrl);
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname))
    throw new Error(`the load client is for loopback only, not ${url.hostname}`);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1024 });
  const started = process.hrtime.bigint();
  const sinceStart = () => Number(process.hrtime.bigint() - started) / 1e6;
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));
  const one = async (request: T, index: number): Promise<LoadResult<T>> => {
    await sleep((index * 1000) / perSecond - sinceStart());
    const first = sinceStart();
    let unavailable = 0;
    for (;;) {
      const result = await send(agent, url, request, timeoutMs);
      // A prepare refused for capacity is an answer: the open executions decide when a place frees, not the retry.
      if (result.status !== 503 || result.body?.code === 'CAPACITY_FULL' || unavailable + 1 >= maxAttempts)
        return { ...result, ms: sinceStart() - first, unavailable };
      unavailable++;
      await sleep(1000 * Number(result.retryAfter ?? 1));
    }
  };
  try {
    const results = await Promise.all(requests.map(one));
    return { results, seconds: sinceStart() / 1000 };
  } finally {
    agent.destroy();
  }
}

/**
 * Sends again, one at a time and after a second (the API's Retry-After), every request of `results`
 * answered 503 ("the outcome is unknown; the same request may be retried safely"), as a client
 * would, at most `attempts` rounds; each retry's answer replaces the 503 in `results`. Returns how
 * many sends were retries.
 */
export async function retry503<T extends LoadRequest>(base: string, results: LoadResult<T>[], attempts = 5): Promise<number> {
  let retried = 0;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    const failed = results.map((r, i) => [r, i] as const).filter(([r]) => r.status === 503);
    if (failed.length === 0) break;
    retried += failed.length;
    await new Promise((r) => setTimeout(r, 1000));
    const again = await runLoad(
      base,
      failed.map(([r]) => r.request),
      1,
    );
    failed.forEach(([, i], k) => (results[i] = again.results[k]));
  }
  return retried;
}

/** The p-th percentile (0–100) of `values`, nearest rank. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** One line per request kind: count, statuses, p50 / p99 / max latency. */
export function figures(results: readonly LoadResult[]): string[] {
  const kinds = [...new Set(results.map((r) => r.request.kind))];
  return kinds.map((kind) => {
    const of = results.filter((r) => r.request.kind === kind);
    const statuses = new Map<string, number>();
    for (const r of of) statuses.set(r.error ? 'error' : String(r.status), (statuses.get(r.error ? 'error' : String(r.status)) ?? 0) + 1);
    const ms = of.map((r) => r.ms);
    const byStatus = [...statuses]
      .sort()
      .map(([s, n]) => `${s}: ${n}`)
      .join(', ');
    return `${kind.padEnd(16)} ${String(of.length).padStart(5)} requests  {${byStatus}}  p50 ${percentile(ms, 50).toFixed(0)} ms  p99 ${percentile(ms, 99).toFixed(0)} ms  max ${Math.max(...ms).toFixed(0)} ms`;
  });
}

/** Fisher–Yates with a seeded generator, so a run's order can be replayed. */
export function shuffle<T>(items: T[], seed: number): T[] {
  let state = seed >>> 0 || 1;
  const random = () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 2 ** 32;
  };
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j], items[i]];
  }
  return items;
}

/** The JSON lines a process writes to `stream` (its log), collected as they come; other lines are skipped. */
export function jsonLines(stream: NodeJS.ReadableStream): Array<Record<string, unknown>> {
  const lines: Array<Record<string, unknown>> = [];
  createInterface({ input: stream }).on('line', (line) => {
    try {
      lines.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      // not a log line
    }
  });
  return lines;
}

/**
 * The causes behind the API's 5xx log lines (level error: answered 500), by route and error type,
 * each with its count and first message (with its gRPC code when it has one), so that a load test
 * that meets a 500 says what the API saw.
 */
export function errorTypes(lines: ReadonlyArray<Record<string, any>>): Record<string, { count: number; first: string }> {
  const out: Record<string, { count: number; first: string }> = {};
  const route = (p = '') =>
    p.startsWith('/chain/') ? 'whitelists' : p.endsWith('/submit') ? 'submit' : p.endsWith('/deposit') ? 'deposit' : 'prepare or get';
  for (const line of lines) {
    if (line.level < 50) continue;
    const type = `${route(line.path)}: ${line.err?.type ?? line.msg}`;
    const code = line.err?.code === undefined ? '' : `(code ${line.err.code}) `;
    out[type] ??= { count: 0, first: `${code}${String(line.err?.message ?? line.msg)}`.slice(0, 300) };
    out[type].count++;
  }
  return out;
}
