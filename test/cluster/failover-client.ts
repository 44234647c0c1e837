/**
 * A client of several API processes, as a load balancer with retries gives one: each logical
 * request goes to the next API in turn; when no HTTP answer comes back (refused, reset, timeout)
 * or the answer is 503 ("the same request may be retried safely") it is sent again, with the same
 * body, to the other API after a short pause, until it is answered or `giveUpMs` has passed.
 * Every attempt's outcome is kept, so a test can say what clients saw during each fault.
 */
export interface Attempt {
  /** HTTP status, or `error` when no answer came back. */
  status: number | 'error';
  api: number;
  at: number;
  ms: number;
  error?: string;
}

export interface Outcome {
  status: number;
  body: any;
  /** The final answer's `Idempotent-Replayed` header: true when a prepare was answered from the existing record (decision 0054). */
  replayed?: boolean;
  attempts: Attempt[];
  /** First send to final answer (or giving up). */
  ms: number;
  startedAt: number;
  gaveUp: boolean;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class FailoverClient {
  private next = 0;
  constructor(
    private readonly apis: readonly string[],
    private readonly options: { attemptTimeoutMs?: number; giveUpMs?: number; pauseMs?: number } = {},
  ) {}

  async send(
    method: string,
    path: string,
    options: { json?: unknown; token?: string; headers?: Record<string, string> } = {},
  ): Promise<Outcome> {
    const startedAt = Date.now();
    const attempts: Attempt[] = [];
    let api = this.next++ % this.apis.length;
    const headers: Record<string, string> = { ...(options.headers ?? {}) };
    if (options.json !== undefined) headers['content-type'] = 'application/json';
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    const body = options.json === undefined ? undefined : JSON.stringify(options.json);
    for (;;) {
      const at = Date.now();
      try {
        const res = await fetch(this.apis[api] + path, {
          method,
          headers,
          body,
          signal: AbortSignal.timeout(this.options.attemptTimeoutMs ?? 30_000),
        });
        const text = await res.text();
        attempts.push({ status: res.status, api, at, ms: Date.now() - at });
        if (res.status !== 503) {
          let parsed: unknown;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {
            parsed = text;
          }
          const replayed = res.headers.get('idempotent-replayed') === 'true';
          return { status: res.status, body: parsed, replayed, attempts, ms: Date.now() - startedAt, startedAt, gaveUp: false };
        }
      } catch (err) {
        attempts.push({
          status: 'error',
          api,
          at,
          ms: Date.now() - at,
          error: String((err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name),
        });
      }
      if (Date.now() - startedAt > (this.options.giveUpMs ?? 120_000)) {
        const last = attempts[attempts.length - 1];
        return {
          status: last.status === 'error' ? 0 : last.status,
          body: undefined,
          attempts,
          ms: Date.now() - startedAt,
          startedAt,
          gaveUp: true,
        };
      }
      api = (api + 1) % this.apis.length;
      await sleep(this.options.pauseMs ?? 250);
    }
  }
}
