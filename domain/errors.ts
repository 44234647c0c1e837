/**
 * The one error type of the service. Domain code and activities throw it (or return it);
 * the HTTP edge renders it once. Only `expose`d messages reach a client: a 5xx answer carries
 * a fixed text, never `message`.
 */
export class ServiceError extends Error {
  readonly code: string;
  readonly status: number;
  readonly expose: boolean;
  /** Seconds for the `Retry-After` header (429, 503): when the same request may be sent again. */
  readonly retryAfterS?: number;

  constructor(status: number, code: string, message: string, options: { expose?: boolean; cause?: unknown; retryAfterS?: number } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ServiceError';
    this.status = status;
    this.code = code;
    this.expose = options.expose ?? status < 500;
    if (options.retryAfterS !== undefined) this.retryAfterS = options.retryAfterS;
  }
}

export const badRequest = (message: string, code = 'BAD_REQUEST') => new ServiceError(400, code, message);
export const unauthorized = (message: string) => new ServiceError(401, 'UNAUTHORIZED', message);
/** The code of a 400 whose signature or signer key does not verify: a failed authentication too. */
export const SIGNATURE_REFUSED = 'SIGNATURE_REFUSED';
export const signatureRefused = (message: string) => badRequest(message, SIGNATURE_REFUSED);
export const forbidden = (message: string) => new ServiceError(403, 'FORBIDDEN', message);
export const notFound = (message: string) => new ServiceError(404, 'NOT_FOUND', message);
export const conflict = (message: string, code = 'CONFLICT') => new ServiceError(409, code, message);
export const tooManyRequests = (message: string, retryAfterS: number) => new ServiceError(429, 'RATE_LIMITED', message, { retryAfterS });
/**
 * 503: the outcome is unknown (a deadline passed, the server shed load or was unreachable) and the
 * same request may be sent again safely. The message is exposed: it tells the client what to do.
 */
export const unavailable = (message: string, retryAfterS: number, cause?: unknown) =>
  new ServiceError(503, 'UNAVAILABLE', message, { expose: true, retryAfterS, cause });
export const internal = (message: string, cause?: unknown) => new ServiceError(500, 'INTERNAL', message, { expose: false, cause });
