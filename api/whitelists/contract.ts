/**
 * The whitelist routes' contract, written once: the request schemas the routes validate with
 * (ajv, strict), the answers they send, and their OpenAPI operations (api/operations/openapi.ts
 * assembles the document from them).
 */
import { EOA_PATTERN, TIME_PATTERN } from '../../contracts/ids';
import {
  answer,
  body,
  busy,
  param,
  perToken,
  queryParameters,
  ref,
  retryAfter,
  wlError,
  wwwAuthenticate,
  bearer,
  type Json,
} from '../http/openapi-parts';

// ---- requests ----

export const whitelistChangeSchema = {
  $id: 'WhitelistChange',
  type: 'object',
  additionalProperties: false,
  required: ['op_type', 'kind', 'entry'],
  properties: {
    op_type: { type: 'string', enum: ['add_entry', 'remove_entry'] },
    kind: { type: 'string', enum: ['developer', 'user'] },
    entry: { type: 'string', pattern: EOA_PATTERN, description: 'an EOA; mixed case must pass its EIP-55 checksum' },
  },
} as const;

/** The batch limit is configuration, so the array schema is built per app. */
export const whitelistBodySchema = (maxBatchLen: number) =>
  ({
    $id: 'WhitelistRequest',
    type: 'array',
    minItems: 1,
    maxItems: maxBatchLen,
    items: whitelistChangeSchema,
  }) as const;

// ---- whitelist reads (GET /chain/whitelists/...) ----

export const whitelistKindParamSchema = { type: 'string', enum: ['developer', 'user'] } as const;
export const eoaParamSchema = {
  type: 'string',
  pattern: EOA_PATTERN,
  description: 'an EOA; mixed case must pass its EIP-55 checksum',
} as const;
/** Batch ids are UUIDs (the `X-Batch-Id` of every batch answer). */
export const batchIdParamSchema = { type: 'string', pattern: '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' } as const;

export const MAX_PAGE_SIZE = 1000;
export const DEFAULT_PAGE_SIZE = 100;
const pageSizeSchema = {
  type: 'integer',
  minimum: 1,
  maximum: MAX_PAGE_SIZE,
  default: DEFAULT_PAGE_SIZE,
  description: `entries per page, 1..${MAX_PAGE_SIZE}`,
} as const;
const pageTokenSchema = {
  type: 'string',
  minLength: 1,
  maxLength: 4096,
  pattern: '^[A-Za-z0-9_-]+$',
  description: 'the nextPageToken of the previous page (with the same filters)',
} as const;

/** Query of `GET /chain/whitelists/{kind}`; each property is one query parameter in the OpenAPI document. */
export const whitelistListQuerySchema = {
  $id: 'WhitelistListQuery',
  type: 'object',
  additionalProperties: false,
  properties: { pageSize: pageSizeSchema, pageToken: pageTokenSchema },
} as const;

/** Query of `GET /chain/whitelists/audit`. */
export const whitelistAuditQuerySchema = {
  $id: 'WhitelistAuditQuery',
  type: 'object',
  additionalProperties: false,
  properties: {
    kind: { ...whitelistKindParamSchema, description: 'only this whitelist' },
    entry: { ...eoaParamSchema, description: 'only this EOA (any case; mixed case must pass its EIP-55 checksum)' },
    tokenId: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,64}$', description: 'only changes authorised by this token id' },
    since: { type: 'string', pattern: TIME_PATTERN, description: 'only changes applied at or after this time (RFC 3339)' },
    pageSize: pageSizeSchema,
    pageToken: pageTokenSchema,
  },
} as const;

// ---- answers ----

const isoTime = { type: 'string', format: 'date-time' } as const;

/** Whitelists' error body: `error` is the HTTP status text. */
export const whitelistErrorSchema = {
  type: 'object',
  required: ['error', 'errorMessage'],
  properties: { error: { type: 'string' }, errorMessage: { type: 'string' } },
} as const;

/** One confirmation per change, in request order. */
export const confirmationsSchema = {
  type: 'array',
  items: { type: 'string', pattern: '^0x[0-9a-fA-F]{40} (added to|removed from) (developer|user) whitelist$' },
} as const;

/** 408: the confirmations of the changes whose node answered in time. */
export const whitelistTimeoutSchema = {
  type: 'object',
  required: ['error', 'errorMessage', 'result'],
  properties: {
    error: { const: 'Request Timeout' },
    errorMessage: { type: 'string' },
    result: { $ref: '#/components/schemas/WhitelistConfirmations' },
  },
} as const;

const eoa = { type: 'string', pattern: EOA_PATTERN } as const;
const kind = whitelistKindParamSchema;
const opType = whitelistChangeSchema.properties.op_type;
const nextPageToken = { type: 'string', description: 'present when more follow: send it as pageToken (with the same filters)' } as const;

export const whitelistEntriesAnswerSchema = {
  type: 'object',
  required: ['result'],
  properties: {
    result: {
      type: 'array',
      items: eoa,
      description: 'EIP-55 entries, sorted case-insensitively, each as the newest change a majority of its replicas holds',
    },
    nextPageToken,
  },
} as const;

export const whitelistMembershipAnswerSchema = {
  type: 'object',
  required: ['result'],
  properties: {
    result: { type: 'object', required: ['kind', 'entry', 'listed'], properties: { kind, entry: eoa, listed: { type: 'boolean' } } },
  },
} as const;

export const whitelistBatchStatusAnswerSchema = {
  type: 'object',
  required: ['result'],
  properties: {
    result: {
      type: 'object',
      required: ['batchId', 'tokenId', 'workflowStatus', 'startedAt', 'changes'],
      properties: {
        batchId: { type: 'string' },
        tokenId: { type: 'string', description: 'the id of the token that sent the batch (never the token)' },
        workflowStatus: {
          type: 'string',
          description:
            'the batch workflow: running until every change is applied, reverted or not applied; then completed (terminated, timed_out... if stopped from outside)',
        },
        outcome: {
          type: 'object',
          description: 'the HTTP answer of the batch (absent until known)',
          required: ['status'],
          properties: { status: { type: 'integer', enum: [200, 403, 408, 500] }, errorMessage: { type: 'string' } },
        },
        startedAt: isoTime,
        closedAt: isoTime,
        changes: {
          type: 'array',
          description: 'every change, in request order',
          items: {
            type: 'object',
            required: ['op_type', 'kind', 'entry', 'node', 'state'],
            properties: {
              op_type: opType,
              kind,
              entry: eoa,
              node: {
                type: 'string',
                pattern: '^node-([1-9][0-9]*|retired)$',
                description:
                  "the first of the entry's replicas (highest rendezvous weight): node-N, its place in STORAGE_NODES (never its address)",
              },
              state: {
                type: 'string',
                enum: ['applied', 'pending', 'reverted', 'not-applied', 'unknown'],
                description:
                  'applied: a majority of its replicas applied it; pending: not yet, the rest are being retried; reverted: the batch failed and this change was undone; unknown: the workflow was stopped from outside first',
              },
              changed: { type: 'boolean', description: "the node's answer: whether the change altered the set (absent until it answered)" },
              superseded: {
                type: 'boolean',
                enum: [true],
                description:
                  'set when a newer batch had already decided the entry: counted as applied, the set left as the newer batch made it',
              },
            },
          },
        },
      },
    },
  },
} as const;

export const whitelistAuditAnswerSchema = {
  type: 'object',
  required: ['result'],
  properties: {
    result: {
      type: 'array',
      description:
        'applied changes, each once, newest first in the order of changes (position, batch, revert, index), merged from every storage node',
      items: {
        type: 'object',
        required: ['batchId', 'position', 'revert', 'op_type', 'kind', 'entry', 'changed', 'superseded', 'node', 'appliedAt'],
        properties: {
          batchId: { type: 'string', description: 'the batch (X-Batch-Id); for a revert, the failed batch it undid' },
          position: {
            type: 'integer',
            minimum: 0,
            description:
              "the batch's place in the order of accepted batches (its start, ms since the epoch); the newest position decides an entry",
          },
          revert: { type: 'boolean', description: 'true for the change that undid a change of batchId after its 500' },
          op_type: opType,
          kind,
          entry: { type: 'string' },
          changed: { type: 'boolean' },
          superseded: { type: 'boolean', description: 'true when a newer batch had already decided the entry: recorded, not applied' },
          node: {
            type: 'string',
            pattern: '^node-([1-9][0-9]*|retired)$',
            description: 'the replica that applied it first: node-N, its place in STORAGE_NODES (never its address)',
          },
          tokenId: { type: 'string', description: 'the token id the signed request to the node carried' },
          appliedAt: { ...isoTime, description: "the node's clock when it made the change durable" },
        },
      },
    },
    nextPageToken,
  },
} as const;

// ---- operations ----

/** `POST /chain/whitelists/`, which also answers without the trailing slash. */
export function whitelistOperation(operationId: string): Json {
  const batchId = { 'X-Batch-Id': { description: 'the batch; its workflow is `whitelist-batch:{batchId}`', schema: { type: 'string' } } };
  return {
    operationId,
    summary: 'Apply a batch of whitelist changes on the storage nodes, within a deadline',
    tags: ['whitelists'],
    security: bearer,
    description:
      'Each change needs `whitelist:{kind}:{add|remove}`, `whitelist:{kind}:*` or `whitelist:*`. Checks run in the order 401, 400/413, 403.',
    parameters: [param('timeout'), param('requestId')],
    requestBody: body('WhitelistRequest'),
    responses: {
      200: answer('every change applied; one confirmation per change, in request order', ref('WhitelistConfirmations'), batchId),
      400: wlError('body empty, not JSON, off-schema, not an EOA or a bad EIP-55 checksum, over MaxBatchLen, or a bad Timeout header'),
      401: wlError('no, malformed or unknown bearer token', wwwAuthenticate),
      403: wlError('the token lacks the scope of some change (or was revoked before the batch ran); nothing applied', batchId),
      408: answer(
        'some node did not answer by the deadline; `result` lists the confirmations of the nodes that did; the rest are still being applied',
        ref('WhitelistTimeout'),
        batchId,
      ),
      413: wlError('body over bodyLimitBytes (64 KiB)'),
      ...busy('whitelist', perToken),
      500: wlError('a node refused or answered unreadably; the batch is reverted on the other nodes', batchId),
    },
  };
}

/** The whitelist reads (api/whitelists/read-routes.ts); every one takes a bearer token. */
export function whitelistReadPaths(): Json {
  const read = (kindScope: string) => `Needs \`whitelist:read\`, ${kindScope} or \`whitelist:*\`.`;
  const common = (what403: string) => ({
    401: wlError('no, malformed or unknown bearer token', wwwAuthenticate),
    403: wlError(what403),
    ...busy('whitelist', perToken),
    500: wlError('a fault of the service itself; no details'),
  });
  const nodeDown = (what: string) => wlError(`${what}; errorMessage names the node; retry after Retry-After seconds`, retryAfter);
  const get = (operationId: string, summary: string, description: string, parameters: Json[], responses: Json) => ({
    get: {
      operationId,
      summary,
      tags: ['whitelists'],
      security: bearer,
      description,
      parameters: [...parameters, param('requestId')],
      responses,
    },
  });
  return {
    '/chain/whitelists/audit': get(
      'getWhitelistAudit',
      'The audit trail: every applied change (and every revert) once, newest first, merged from every storage node',
      'Needs `whitelist:audit` or `whitelist:*`. Filters combine; send the same filters with each pageToken.',
      queryParameters(whitelistAuditQuerySchema),
      {
        200: answer('one page of records', ref('WhitelistAuditAnswer')),
        400: wlError(
          'a query parameter off-schema, a mixed-case entry with a bad EIP-55 checksum, or a pageToken this API did not give out',
        ),
        ...common('the token lacks whitelist:audit and whitelist:*'),
        503: nodeDown('more storage nodes did not answer than a majority of copies can spare'),
      },
    ),
    '/chain/whitelists/batches/{batchId}': get(
      'getWhitelistBatch',
      "A batch's outcome and the state of each change, while Temporal keeps its workflow",
      `${read('`whitelist:{kind}:*` for every kind the batch touches')} The token that sent the batch may always read it.`,
      [param('batchId')],
      {
        200: answer('the batch', ref('WhitelistBatchStatusAnswer')),
        400: wlError('batchId is not a UUID'),
        ...common('the token may not read this batch'),
        404: wlError("no such batch (never sent, or past Temporal's retention)"),
      },
    ),
    '/chain/whitelists/{kind}': get(
      'listWhitelist',
      'The entries of one whitelist, each from a majority of its replicas, sorted, paginated',
      read('`whitelist:{kind}:*`'),
      [param('kind'), ...queryParameters(whitelistListQuerySchema)],
      {
        200: answer('one page of entries', ref('WhitelistEntriesAnswer')),
        400: wlError('kind unknown, a query parameter off-schema, or a pageToken this API did not give out'),
        ...common('the token may not read this kind'),
        503: nodeDown(
          "a majority of some entry's replicas did not answer, so the list could be stale or incomplete (never a partial list)",
        ),
      },
    ),
    '/chain/whitelists/{kind}/{entry}': get(
      'getWhitelistEntry',
      'Whether one EOA is on a whitelist: the newest change a majority of its replicas holds (a replica behind is repaired first)',
      read('`whitelist:{kind}:*`'),
      [param('kind'), param('entry')],
      {
        200: answer('listed or not; entry in EIP-55 form', ref('WhitelistMembershipAnswer')),
        400: wlError('kind unknown, entry not an EOA, or a mixed-case entry with a bad EIP-55 checksum'),
        ...common('the token may not read this kind'),
        503: nodeDown("a majority of the entry's replicas did not answer"),
      },
    ),
  };
}

/** The parameters the whitelist operations refer to, as OpenAPI components; the Timeout cap is configuration. */
export const whitelistParameters = (request: { maxTimeoutMs: number; timeoutMs: number }) => ({
  kind: { name: 'kind', in: 'path', required: true, schema: whitelistKindParamSchema },
  entry: { name: 'entry', in: 'path', required: true, schema: eoaParamSchema },
  batchId: {
    name: 'batchId',
    in: 'path',
    required: true,
    description: "the X-Batch-Id of the batch's answer",
    schema: batchIdParamSchema,
  },
  // Same pattern as the route's TIMEOUT_HEADER check (api/whitelists/routes.ts).
  timeout: {
    name: 'Timeout',
    in: 'header',
    required: false,
    description: `deadline in ms, capped at ${request.maxTimeoutMs}; default ${request.timeoutMs}`,
    schema: { type: 'string', pattern: '^[1-9][0-9]{0,15}$' },
  },
});
