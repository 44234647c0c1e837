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
