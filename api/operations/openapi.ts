import { readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot, type Config } from '../../config/config';
import * as answers from '../response-schemas';
import {
  PAGE_SIZE,
  batchIdParamSchema,
  cancelBodySchema,
  depositBodySchema,
  eoaParamSchema,
  executionIdParamSchema,
  listQuerySchema,
  prepareBodySchema,
  submitBodySchema,
  walletParamSchema,
  whitelistAuditQuerySchema,
  whitelistBodySchema,
  whitelistChangeSchema,
  whitelistKindParamSchema,
  whitelistListQuerySchema,
} from '../schemas';
import { EXECUTION_STATUSES } from '../../domain/execution-state';

type Json = Record<string, unknown>;

/** A schema of api/schemas.ts as a component: its `$id` names it, and is dropped (it would re-base refs). */
const component = <T extends { $id?: string }>(schema: T): Omit<T, '$id'> & { $id: undefined } => ({ ...schema, $id: undefined });
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: Json) => ({ 'application/json': { schema } });

const requestIdHeader = {
  'X-Request-Id': {
    description: 'the request id (the caller’s, when sane, else generated); every log line of the request carries it',
    schema: { type: 'string' },
  },
};

/** One response; `status` text comes from the caller so each route says what the status means there. */
function answer(description: string, schema?: Json, headers: Json = {}): Json {
  return { description, headers: { ...requestIdHeader, ...headers }, ...(schema ? { content: json(schema) } : {}) };
}

const execError = (description: string) => answer(description, ref('Error'));
const wlError = (description: string, headers: Json = {}) => answer(description, ref('WhitelistError'), headers);
const wwwAuthenticate = { 'WWW-Authenticate': { description: 'always `Bearer`', schema: { type: 'string', const: 'Bearer' } } };

const retryAfter = {
  'Retry-After': { description: 'seconds to wait before sending the same request again', schema: { type: 'string', pattern: '^[0-9]+$' } },
};
/** 429 and 503, which every business route may answer (api/http/rate-limit.ts, api/temporal/errors.ts). */
const busy = (style: 'execution' | 'whitelist', limitedBy: string) => ({
  429: answer(
    `over the rate limit ${limitedBy}; retry after Retry-After seconds`,
    ref(style === 'execution' ? 'Error' : 'WhitelistError'),
    retryAfter,
  ),
  503: answer(
    'the outcome is unknown (Temporal busy or briefly unreachable); the same request may be retried safely after Retry-After seconds',
    ref(style === 'execution' ? 'Error' : 'WhitelistError'),
    retryAfter,
  ),
});
const perClient = 'of this client address or wallet';
const perToken = 'of this token';

const bearer = [{ bearerAuth: [] }];
const param = (name: string) => ({ $ref: `#/components/parameters/${name}` });
const body = (name: string) => ({ required: true, content: json(ref(name)) });

/** From prepare's 201 to the calls a client makes next on the same execution (OpenAPI links). */
const executionLinks = Object.fromEntries(
  (['getExecution', 'depositExecution', 'submitExecution', 'cancelExecution'] as const).map((operationId) => [
    operationId,
    {
      operationId,
      parameters: {
        wallet: '$response.body#/result/wallet',
        ...(operationId === 'submitExecution' ? {} : { executionId: '$response.body#/result/executionId' }),
      },
      description:
        operationId === 'submitExecution'
          ? 'submit the signature of the execution just prepared (its executionId goes in the body)'
          : `the ${operationId.replace('Execution', '')} of the execution just prepared`,
    },
  ]),
);

/** The execution routes (DESIGN.md "Executions"). */
function executionPaths(): Json {
  return {
    '/api/v1/executions/{wallet}': {
      get: {
        operationId: 'listExecutions',
        summary: "List a wallet's executions, newest first (from the read model)",
        tags: ['executions'],
        security: [],
        description:
          'Keyset pagination: pass `nextPageToken` as `pageToken` until it is absent. Served by the service database, which the workflows update after every change (usually within a second).',
        parameters: [param('wallet'), param('statusFilter'), param('pageSize'), param('pageToken'), param('requestId')],
        responses: {
          200: answer('one page', ref('ExecutionList')),
          400: execError(
            'path or query invalid: an unknown status, a pageSize out of 1-100, a pageToken this API did not issue, an unknown parameter',
          ),
          ...busy('execution', perClient),
          500: execError('a fault of the service itself (e.g. the database is unreachable); no details'),
        },
      },
      post: {
        operationId: 'prepareExecution',
        summary: 'Prepare an execution (starts its workflow)',
        tags: ['executions'],
        security: bearer,
        description: 'Needs the scope `executions:prepare`.',
        parameters: [param('wallet'), param('requestId')],
        requestBody: body('PrepareRequest'),
        responses: {
          200: answer(
            'the same prepare again (same executionId, intent, signer key and ttl): the existing record, nothing started',
            ref('ExecutionRecordAnswer'),
            {
              'Idempotent-Replayed': { description: 'always `true` on this answer', schema: { type: 'string', const: 'true' } },
            },
          ),
          201: {
            ...answer('prepared; the record', ref('ExecutionRecordAnswer')),
            links: executionLinks,
          },
          400: execError('path, body or intent invalid (also: not application/json, not JSON)'),
          401: answer('no, malformed or unknown bearer token', ref('Error'), wwwAuthenticate),
          403: execError('the token lacks executions:prepare'),
          409: execError('this executionId already exists for the wallet with another intent, signer key or ttl'),
          413: execError('body over bodyLimitBytes (64 KiB)'),
          ...busy('execution', perToken),
          500: execError('a fault of the service itself; no details'),
        },
      },
    },
    '/api/v1/executions/{wallet}/submit': {
      post: {
        operationId: 'submitExecution',
        summary: 'Submit the signed intent (no token: the signature is the proof)',
        tags: ['executions'],
        security: [],
        parameters: [param('wallet'), param('requestId')],
        requestBody: body('SubmitRequest'),
        responses: {
          200: answer('accepted (or the same signature again: a safe retry); the status it left', ref('SubmitAnswer')),
          400: execError(
            'off-schema body, undecodable key or signature, wrong address/domain/timestamp, not the signer key, or the signature does not verify',
          ),
          404: execError('no such execution for this wallet'),
          409: execError('the execution is EXPIRED or CANCELLED, or already holds another signature'),
          413: execError('body over bodyLimitBytes (64 KiB)'),
          ...busy('execution', perClient),
          500: execError('a fault of the service itself; no details'),
        },
      },
    },
    '/api/v1/executions/{wallet}/{executionId}/deposit': {
      post: {
        operationId: 'depositExecution',
        summary: 'Report a completed deposit (same effect as the depositCompleted signal)',
        tags: ['executions'],
        security: bearer,
        description: 'Needs the scope `executions:deposit`.',
        parameters: [param('wallet'), param('executionId'), param('requestId')],
        requestBody: body('DepositRequest'),
        responses: {
          200: answer('recorded (the same txHash again is a no-op); the record', ref('ExecutionRecordAnswer')),
          400: execError('path or body invalid'),
          401: answer('no, malformed or unknown bearer token', ref('Error'), wwwAuthenticate),
          403: execError('the token lacks executions:deposit'),
          404: execError('no such execution for this wallet'),
          409: execError('another txHash is stored, or the execution is EXPIRED or CANCELLED (recorded in refusedDeposits)'),
          413: execError('body over bodyLimitBytes (64 KiB)'),
          ...busy('execution', perToken),
          500: execError('a fault of the service itself; no details'),
        },
      },
    },
    '/api/v1/executions/{wallet}/{executionId}': {
      get: {
        operationId: 'getExecution',
        summary: 'Read an execution record',
        tags: ['executions'],
        security: [],
        parameters: [param('wallet'), param('executionId'), param('requestId')],
        responses: {
          200: answer(
            'the record: from the workflow while Temporal keeps it, from the service database after its retention',
            ref('ExecutionRecordAnswer'),
          ),
          400: execError('path invalid'),
          404: execError('no such execution for this wallet'),
          ...busy('execution', perClient),
          500: execError('a fault of the service itself; no details'),
        },
      },
    },
  };
}

/** Cancel and the SSE stream of one execution. */
function executionExtraPaths(): Json {
  return {
    '/api/v1/executions/{wallet}/{executionId}/cancel': {
      post: {
        operationId: 'cancelExecution',
        summary: 'Cancel an execution (signed by the wallet; no token)',
        tags: ['executions'],
        security: [],
        description:
          'The signer key signs (UTF-8, ed25519) `{domain} asks you to cancel execution {executionId}\\nWallet: {address}\\nTimestamp: {timestamp}`. PREPARED → CANCELLED; OPERATION_PENDING → CANCELLED with the deposit marked `refundDue`. Workflow Update `cancelExecution`.',
        parameters: [param('wallet'), param('executionId'), param('requestId')],
        requestBody: body('CancelRequest'),
        responses: {
          200: answer('cancelled (or already CANCELLED: nothing written); the record', ref('ExecutionRecordAnswer')),
          400: execError(
            'off-schema body, undecodable key or signature, wrong address/domain/timestamp, not the signer key, or the signature does not verify',
          ),
          404: execError('no such execution for this wallet'),
          409: execError('the execution is SIGNING or EXPIRED and can no longer be cancelled'),
          413: execError('body over bodyLimitBytes (64 KiB)'),
          ...busy('execution', perClient),
          500: execError('a fault of the service itself; no details'),
        },
      },
    },
    '/api/v1/executions/{wallet}/{executionId}/events': {
      get: {
        operationId: 'executionEvents',
        summary: 'Server-Sent Events: the record now, then at every change, until a final status',
        tags: ['executions'],
        security: [],
        description:
          "Every event is `event: status`, `id: <record version>`, `data: <execution record JSON>`. The first is the current record; the stream ends after SIGNING, EXPIRED or CANCELLED. A reconnect whose `Last-Event-ID` is the final record's version is answered 204, which stops an EventSource.",
        parameters: [
          param('wallet'),
          param('executionId'),
          {
            name: 'Last-Event-ID',
            in: 'header',
            required: false,
            description: 'the id of the last event received (EventSource sends it on reconnect): that record is not sent again',
            schema: { type: 'string' },
          },
          param('requestId'),
        ],
        responses: {
          200: {
            description: 'the event stream',
            headers: requestIdHeader,
            content: { 'text/event-stream': { schema: { type: 'string' } } },
          },
          204: { description: 'the final record was already received (Last-Event-ID): nothing more will come', headers: requestIdHeader },
          400: execError('path invalid'),
          404: execError('no such execution for this wallet'),
          ...busy('execution', perClient),
          500: execError('a fault of the service itself; no details'),
        },
      },
    },
  };
}

/** `POST /chain/whitelists/`, which also answers without the trailing slash. */
function whitelistOperation(operationId: string): Json {
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

/** Each property of a query schema (api/schemas.ts) as an OpenAPI query parameter. */
const queryParameters = (schema: { properties: Record<string, Json> }) =>
  Object.entries(schema.properties).map(([name, property]) => ({ name, in: 'query', required: false, schema: property }));

/** The whitelist reads (api/whitelists/read-routes.ts); every one takes a bearer token. */
function whitelistReadPaths(): Json {
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
      'The audit trail: every applied change (and every revert), newest first, merged from every storage node',
      'Needs `whitelist:audit` or `whitelist:*`. Filters combine; send the same filters with each pageToken.',
      queryParameters(whitelistAuditQuerySchema),
      {
        200: answer('one page of records', ref('WhitelistAuditAnswer')),
        400: wlError(
          'a query parameter off-schema, a mixed-case entry with a bad EIP-55 checksum, or a pageToken this API did not give out',
        ),
        ...common('the token lacks whitelist:audit and whitelist:*'),
        503: nodeDown('a storage node did not answer, so the page would be incomplete'),
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
      'The entries of one whitelist, merged from every storage node, sorted, paginated',
      read('`whitelist:{kind}:*`'),
      [param('kind'), ...queryParameters(whitelistListQuerySchema)],
      {
        200: answer('one page of entries', ref('WhitelistEntriesAnswer')),
        400: wlError('kind unknown, a query parameter off-schema, or a pageToken this API did not give out'),
        ...common('the token may not read this kind'),
        503: nodeDown('a storage node did not answer, so the list would be incomplete (never a partial list)'),
      },
    ),
    '/chain/whitelists/{kind}/{entry}': get(
      'getWhitelistEntry',
      'Whether one EOA is on a whitelist; asks only the storage node that owns it',
      read('`whitelist:{kind}:*`'),
      [param('kind'), param('entry')],
      {
        200: answer('listed or not; entry in EIP-55 form', ref('WhitelistMembershipAnswer')),
        400: wlError('kind unknown, entry not an EOA, or a mixed-case entry with a bad EIP-55 checksum'),
        ...common('the token may not read this kind'),
        503: nodeDown('the storage node that owns the entry did not answer'),
      },
    ),
  };
}

/** Operability routes of the public port: probes and this document (metrics are on the operator port). */
function operationsPaths(): Json {
  const plain = (operationId: string, summary: string, responses: Json) => ({
    get: { operationId, summary, tags: ['operations'], security: [], parameters: [param('requestId')], responses },
  });
  return {
    '/healthz': plain('health', 'Liveness: the process is up', { 200: answer('up', ref('Health')) }),
    '/readyz': plain(
      'readiness',
      "Readiness of this process: Temporal answers (one 2 s probe shared by every caller for a second) and the process is not shutting down. Storage nodes do not gate it, so one node down never takes the API out of a load balancer. Metrics and the storage nodes' health are on the operator port (OPERATOR_PORT), not here",
      {
        200: answer('this process can serve', ref('Readiness')),
        503: answer('Temporal unreachable or the process shutting down; `down` names which', ref('Readiness')),
      },
    ),
    '/openapi.json': plain('openapi', 'This document', { 200: answer('the OpenAPI 3.1 document', { type: 'object' }) }),
  };
}

/**
 * A signed body (submit, cancel) as the route checks it, with the configured domains declared as
 * the enum `connectEnvelope.domain` is held to.
 */
function withAllowedDomains(body: typeof submitBodySchema | typeof cancelBodySchema, allowedDomains: readonly string[]): Json {
  const schema = component(body);
  const envelope = schema.properties.connectEnvelope;
  return {
    ...schema,
    properties: {
      ...schema.properties,
      connectEnvelope: {
        ...envelope,
        properties: { ...envelope.properties, domain: { ...envelope.properties.domain, enum: [...allowedDomains] } },
      },
    },
  };
}

function packageVersion(): string {
  return JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')).version;
}

/**
 * The OpenAPI 3.1 document of the API. Request bodies and path parameters are the very schemas the
 * routes validate with (api/schemas.ts); the batch limit comes from `config`, as in the route.
 */
export function buildOpenApiDocument(config: Config): Json {
  return {
    openapi: '3.1.0',
    info: {
      title: 'intent-service',
      version: packageVersion(),
      description:
        'Execution submission and whitelist management on Temporal. Execution errors are `{ error }`; whitelist errors are `{ error, errorMessage }`.',
    },
    tags: [{ name: 'executions' }, { name: 'whitelists' }, { name: 'operations' }],
    paths: {
      ...executionPaths(),
      ...executionExtraPaths(),
      '/chain/whitelists/': { post: whitelistOperation('applyWhitelistBatch') },
      '/chain/whitelists': { post: whitelistOperation('applyWhitelistBatchNoSlash') },
      ...whitelistReadPaths(),
      ...operationsPaths(),
    },
    components: {
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          description: 'a token from `npm run token -- create`; its scopes decide what it may do',
        },
      },
      parameters: {
        wallet: {
          name: 'wallet',
          in: 'path',
          required: true,
          description: 'the wallet (by default also the signer key, base58)',
          schema: walletParamSchema,
        },
        executionId: { name: 'executionId', in: 'path', required: true, schema: executionIdParamSchema },
        statusFilter: {
          name: 'status',
          in: 'query',
          required: false,
          description: `comma-separated statuses to keep, each one of ${EXECUTION_STATUSES.join(', ')}`,
          schema: listQuerySchema.properties.status,
        },
        pageSize: {
          name: 'pageSize',
          in: 'query',
          required: false,
          description: `${PAGE_SIZE.min}-${PAGE_SIZE.max}, default ${PAGE_SIZE.default}`,
          schema: { type: 'integer', minimum: PAGE_SIZE.min, maximum: PAGE_SIZE.max, default: PAGE_SIZE.default },
        },
        pageToken: {
          name: 'pageToken',
          in: 'query',
          required: false,
          description: "the previous page's nextPageToken",
          schema: listQuerySchema.properties.pageToken,
        },
        requestId: {
          name: 'X-Request-Id',
          in: 'header',
          required: false,
          description: 'kept as the request id when it matches ^[A-Za-z0-9._:-]{1,128}$',
          schema: { type: 'string' },
        },
        // Same pattern as the route's TIMEOUT_HEADER check (api/whitelists/routes.ts).
        kind: { name: 'kind', in: 'path', required: true, schema: whitelistKindParamSchema },
        entry: { name: 'entry', in: 'path', required: true, schema: eoaParamSchema },
        batchId: {
          name: 'batchId',
          in: 'path',
          required: true,
          description: "the X-Batch-Id of the batch's answer",
          schema: batchIdParamSchema,
        },
        timeout: {
          name: 'Timeout',
          in: 'header',
          required: false,
          description: `deadline in ms, capped at ${config.request.maxTimeoutMs}; default ${config.request.timeoutMs}`,
          schema: { type: 'string', pattern: '^[1-9][0-9]{0,15}$' },
        },
      },
      schemas: {
        PrepareRequest: component(prepareBodySchema),
        SubmitRequest: withAllowedDomains(submitBodySchema, config.allowedDomains),
        DepositRequest: component(depositBodySchema),
        CancelRequest: withAllowedDomains(cancelBodySchema, config.allowedDomains),
        WhitelistChange: component(whitelistChangeSchema),
        WhitelistRequest: { ...component(whitelistBodySchema(config.request.maxBatchLen)), items: ref('WhitelistChange') },
        ExecutionRecord: answers.executionRecordSchema,
        ExecutionRecordAnswer: answers.recordAnswerSchema,
        SubmitAnswer: answers.submitAnswerSchema,
        ExecutionList: answers.listAnswerSchema,
        Error: answers.errorSchema,
        WhitelistError: answers.whitelistErrorSchema,
        WhitelistConfirmations: answers.confirmationsSchema,
        WhitelistTimeout: answers.whitelistTimeoutSchema,
        Health: answers.healthSchema,
        Readiness: answers.readinessSchema,
        WhitelistEntriesAnswer: answers.whitelistEntriesAnswerSchema,
        WhitelistMembershipAnswer: answers.whitelistMembershipAnswerSchema,
        WhitelistBatchStatusAnswer: answers.whitelistBatchStatusAnswerSchema,
        WhitelistAuditAnswer: answers.whitelistAuditAnswerSchema,
      },
    },
  };
}
