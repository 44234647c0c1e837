/**
 * The one error the client throws for an answer it could not use: an HTTP error status with the
 * service's `error` text and `Retry-After`, or `status` 0 when no answer came within the deadline
 * (the outcome of a submit or cancel is then unknown: sending the same request again is safe).
 * An aborted call rejects with the signal's reason instead.
 */
export class IntentServiceError extends Error {
  /** The HTTP status; 0 when no answer came (network failure or the deadline passed). */
  readonly status: number;
  /** The `error` text of the answer's body, or what went wrong without one. */
  readonly error: string;
  /** Seconds the service asked to wait before the same request (its `Retry-After`), when it did. */
  readonly retryAfter?: number;

  constructor(status: number, error: string, options: { retryAfter?: number; cause?: unknown } = {}) {
    super(status === 0 ? error : `${status}: ${error}`, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'IntentServiceError';
    this.status = status;
    this.error = error;
    if (options.retryAfter !== undefined) this.retryAfter = options.retryAfter;
  }
}

/** `Retry-After` in seconds: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null): number | undefined {
  if (value === null) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}
