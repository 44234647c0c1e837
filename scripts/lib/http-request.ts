/** A small real-HTTP client for tests: JSON in, status + parsed body + headers out. */
export interface HttpAnswer {
  status: number;
  body: any;
  text: string;
  headers: Headers;
}

export async function request(
  base: string,
  method: string,
  path: string,
  options: { json?: unknown; body?: string | Uint8Array; headers?: Record<string, string>; token?: string } = {},
): Promise<HttpAnswer> {
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  let body: string | Uint8Array | undefined = options.body;
  if (options.json !== undefined) {
    body = JSON.stringify(options.json);
    headers['content-type'] ??= 'application/json';
  }
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  const response = await fetch(base + path, { method, headers, body });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: response.status, body: parsed, text, headers: response.headers };
}

/**
 * `request`, sent again after `Retry-After` while the answer is 503 ("the outcome is unknown; the
 * same request may be retried safely"), as a client of the API does; at most `attempts` sends.
 */
export async function requestRetrying503(
  base: string,
  method: string,
  path: string,
  options: Parameters<typeof request>[3] = {},
  attempts = 10,
): Promise<HttpAnswer> {
  for (let attempt = 1; ; attempt++) {
    const answer = await request(base, method, path, options);
    if (answer.status !== 503 || attempt >= attempts) return answer;
    await new Promise((r) => setTimeout(r, 1000 * Number(answer.headers.get('retry-after') ?? 1)));
  }
}
