import { createHash } from 'node:crypto';

// Secrets the service is given (a chain node's URL whose path holds the provider's key, webhook
// URLs, a database URL's password, OTLP headers) must not reach what it writes down: log lines,
// the failure messages Temporal keeps in a workflow's history, span attributes and statuses. One
// rule, applied where text leaves the process: a secret URL is named by its origin only, any other
// secret by a digest. viem, fetch and the SDKs put URLs into their messages themselves, so the rule
// rewrites text, not only the fields we write.

/** Rewrites a text so that no secret it knows of is left in it. */
export type Redact = (text: string) => string;

/** What a process must not write down. */
export interface Secrets {
  /** URLs named by their origin only (scheme://host:port): their path, query and credentials are the secret. */
  readonly urls?: readonly string[];
  /** Values named by a digest (`[redacted sha256:1a2b3c4d]`): tokens, header values. */
  readonly values?: readonly string[];
}

/** The scheme, host and port of `url`; `[redacted url]` if it does not parse. */
export function originOf(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}`;
  } catch {
    return '[redacted url]';
  }
}

/** A short digest that tells two secrets apart without giving either away. */
export const digestOf = (value: string): string => `[redacted sha256:${createHash('sha256').update(value).digest('hex').slice(0, 8)}]`;

/** Shorter secrets are not looked for: they would match ordinary words. */
const MIN_SECRET_LENGTH = 6;
/** `Authorization: Bearer <token>` wherever a message quotes it. */
const BEARER = /\b(Bearer\s+)[A-Za-z0-9._~+/=-]+/gi;
/** Credentials inside any URL (`postgres://user:password@host`). */
const URL_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@]+@/gi;

/**
 * A Redact for `secrets`: each URL (as given and as the URL parser writes it) becomes its origin,
 * and what lies past its origin (its path and query, its credentials) `[redacted]` wherever it
 * stands alone; each value becomes its digest. Whatever the secrets, a bearer token and a URL's
 * credentials are cut too.
 */
export function redactor(secrets: Secrets): Redact {
  const pairs: Array<[string, string]> = [];
  for (const url of secrets.urls ?? []) {
    const origin = originOf(url);
    pairs.push([url, origin]);
    try {
      const u = new URL(url);
      pairs.push([u.href, origin]);
      const rest = `${u.pathname}${u.search}`;
      for (const part of [rest, u.pathname, u.search.slice(1), u.username, u.password])
        if (part.length >= MIN_SECRET_LENGTH) pairs.push([part, '[redacted]']);
    } catch {
      // Not a URL: its text as given is all there is to look for.
    }
  }
  for (const value of secrets.values ?? []) if (value.length >= MIN_SECRET_LENGTH) pairs.push([value, digestOf(value)]);
  // Longest first: a URL is replaced whole before its path is looked for alone.
  pairs.sort((a, b) => b[0].length - a[0].length);
  return (text) => {
    let out = text;
    for (const [secret, replacement] of pairs) if (out.includes(secret)) out = out.split(secret).join(replacement);
    return out.replace(BEARER, '$1[redacted]').replace(URL_CREDENTIALS, '$1[redacted]@');
  };
}

/**
 * Rewrites `err` in place and answers it: its message, its stack and every string it carries
 * (viem's `shortMessage`, `details`, `url`, `metaMessages`), down its `cause` chain. In place, so
 * that its class, its `name` and the fields callers test (`code`, `status`) stay as they were.
 */
export function redactError<T>(err: T, redact: Redact, seen = new Set<unknown>()): T {
  if (typeof err !== 'object' || err === null || seen.has(err)) return err;
  seen.add(err);
  const record = err as Record<string, unknown>;
  for (const key of new Set([...Object.getOwnPropertyNames(err), 'message', 'stack'])) {
    const value = record[key];
    try {
      if (typeof value === 'string') {
        const clean = redact(value);
        if (clean !== value) record[key] = clean;
      } else if (Array.isArray(value) && value.every((v) => typeof v === 'string')) {
        record[key] = value.map(redact);
      } else if (key === 'cause' || value instanceof Error) {
        redactError(value, redact, seen);
      }
    } catch {
      // A read-only field: nothing a caller can rely on is lost by leaving it.
    }
  }
  return err;
}

/** How deep redactValue copies; deeper objects are left out (a log line's fields are shallow). */
const MAX_DEPTH = 8;

/**
 * A copy of `value` (a log line's fields, a span's attributes) with every string redacted: plain
 * objects and arrays are copied, errors rewritten in place (redactError), anything else kept.
 */
export function redactValue(value: unknown, redact: Redact, depth = 0): unknown {
  if (typeof value === 'string') return redact(value);
  if (typeof value !== 'object' || value === null) return value;
  if (value instanceof Error) return redactError(value, redact);
  if (depth >= MAX_DEPTH) return '[too deep]';
  if (Array.isArray(value)) return value.map((v) => redactValue(v, redact, depth + 1));
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactValue(v, redact, depth + 1)]));
}
