/**
 * The pieces every feature's contract builds its OpenAPI operations from: answers with their
 * headers, references to components, the 429/503 every business route may answer.
 */

export type Json = Record<string, unknown>;

/** A request schema as a component: its `$id` names it, and is dropped (it would re-base refs). */
export const component = <T extends { $id?: string }>(schema: T): Omit<T, '$id'> & { $id: undefined } => ({ ...schema, $id: undefined });
export const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: Json) => ({ 'application/json': { schema } });

export const requestIdHeader = {
  'X-Request-Id': {
    description: 'the request id (the caller’s, when sane, else generated); every log line of the request carries it',
    schema: { type: 'string' },
  },
};

/** One response; `status` text comes from the caller so each route says what the status means there. */
export function answer(description: string, schema?: Json, headers: Json = {}): Json {
  return { description, headers: { ...requestIdHeader, ...headers }, ...(schema ? { content: json(schema) } : {}) };
}

export const execError = (description: string) => answer(description, ref('Error'));
export const wlError = (description: string, headers: Json = {}) => answer(description, ref('WhitelistError'), headers);
export const wwwAuthenticate = { 'WWW-Authenticate': { description: 'always `Bearer`', schema: { type: 'string', const: 'Bearer' } } };

export const retryAfter = {
  'Retry-After': { description: 'seconds to wait before sending the same request again', schema: { type: 'string', pattern: '^[0-9]+$' } },
};
/**
 * What a public route (limited per client) answers of its limit, every answer included, in the
 * Structured Field syntax of draft-ietf-httpapi-ratelimit-headers-11.
 */
export const rateLimitHeaders = {
  'RateLimit-Policy': {
    description: 'the per-client limit: `"client";q=<requests>;w=<window seconds>`',
    schema: { type: 'string', pattern: '^"client";q=[0-9]+;w=[0-9]+$' },
  },
  RateLimit: {
    description: 'what is left of it: `"client";r=<requests left>;t=<seconds until the window resets>`',
    schema: { type: 'string', pattern: '^"client";r=[0-9]+;t=[0-9]+$' },
  },
};

/** 429 and 503, which every business route may answer (api/http/rate-limit.ts, api/temporal/errors.ts). */
export const busy = (style: 'execution' | 'whitelist', limitedBy: string) => ({
  429: answer(
    `over the rate limit ${limitedBy}; retry after Retry-After seconds`,
    ref(style === 'execution' ? 'Error' : 'WhitelistError'),
    limitedBy === perClient ? { ...retryAfter, ...rateLimitHeaders } : retryAfter,
  ),
  503: answer(
    'the outcome is unknown (Temporal busy or briefly unreachable); the same request may be retried safely after Retry-After seconds',
    ref(style === 'execution' ? 'Error' : 'WhitelistError'),
    retryAfter,
  ),
});
export const perClient = 'of this client address or wallet';
export const perToken = 'of this token';

export const bearer = [{ bearerAuth: [] }];
export const param = (name: string) => ({ $ref: `#/components/parameters/${name}` });
export const body = (name: string) => ({ required: true, content: json(ref(name)) });

/** Each property of a query schema (a contract's query schema) as an OpenAPI query parameter. */
export const queryParameters = (schema: { properties: Record<string, Json> }) =>
  Object.entries(schema.properties).map(([name, property]) => ({ name, in: 'query', required: false, schema: property }));

/** The request id header every operation takes. */
export const requestIdParameter = {
  name: 'X-Request-Id',
  in: 'header',
  required: false,
  description: 'kept as the request id when it matches ^[A-Za-z0-9._:-]{1,128}$',
  schema: { type: 'string' },
};
