/**
 * The execution routes' OpenAPI operations: what each path does, its parameters and every answer
 * it may send, in words for the reader of the document. The schemas they name are
 * request-schemas.ts and answer-schemas.ts.
 */
import { EXECUTION_STATUSES } from '../../domain/execution-state';
import {
  answer,
  body,
  busy,
  component,
  execError,
  param,
  perClient,
  perToken,
  ref,
  requestIdHeader,
  wwwAuthenticate,
  bearer,
  type Json,
} from '../http/openapi-parts';
import {
  PAGE_SIZE,
  type cancelBodySchema,
  type refundAddressBodySchema,
  executionIdParamSchema,
  listQuerySchema,
  type submitBodySchema,
  walletParamSchema,
} from './request-schemas';

/**
 * One event of the stream as an EventSource parses it (`event`, `data`, `id`, `retry`): the shape
 * each parsed event of the stream has, so that a client or a contract test can check it.
 */
const sseEventSchema = {
  type: 'object',
  description:
    'one event of the stream, as parsed: `event: status` carries an ExecutionRecord, `event: refund` an ExecutionRefund, as JSON in `data`',
  properties: {
    event: { type: 'string', enum: ['status', 'refund'] },
    data: {
      type: 'string',
      contentMediaType: 'application/json',
      description: 'the record (status) or the refunds ledger row (refund), JSON',
    },
    id: { type: 'string', pattern: '^[0-9]+(\\.[0-9a-f]{16})?$', description: "the stream's position, on the last event of each write" },
    retry: { type: 'integer', minimum: 0, description: 'milliseconds an EventSource waits before it reconnects' },
  },
};

/**
 * A wallet that is an ed25519 public key in base58 (so the default signer key), and a prepare of
 * it: the examples the document gives, so that a client generated from it, or a contract test,
 * starts from an execution that exists.
 */
export const EXAMPLE_WALLET = 'GmaDrppBC7P5ARKV8g3djiwP89vz1jLK23V2GBjuAEGB';
const PREPARE_EXAMPLE = { executionId: 'order-1', intent: { swap: 'USDC->ETH', amount: '10' }, ttlSeconds: 3600 };

/** From prepare's 201 (and its replay's 200) to the calls a client makes next on the same execution (OpenAPI links). */
const executionLinks = Object.fromEntries(
  (
    [
      ['getExecution', 'read the execution just prepared'],
      ['executionEvents', 'follow the status changes of the execution just prepared (Server-Sent Events)'],
      ['depositExecution', 'the deposit of the execution just prepared'],
      ['submitExecution', 'submit the signature of the execution just prepared (its executionId goes in the body)'],
      ['cancelExecution', 'the cancel of the execution just prepared'],
      ['setRefundAddress', "where the execution's refund goes, once its deposit has arrived"],
      ['executionStatusPage', "the depositor's status page of the execution just prepared"],
    ] as const
  ).map(([operationId, description]) => [
    operationId,
    {
      operationId,
      parameters: {
        wallet: '$response.body#/result/wallet',
        ...(operationId === 'submitExecution' ? {} : { executionId: '$response.body#/result/executionId' }),
      },
      description,
    },
  ]),
);

/** What a wallet's signed action on one execution (cancel, the refund address) answers besides its success and its 409. */
const signedActionAnswers = (more400: string) => ({
  400: execError(
    `off-schema body, undecodable key or signature, wrong address/domain/timestamp, not the signer key, or the signature does not verify${more400}`,
  ),
  404: execError('no such execution for this wallet'),
  413: execError('body over bodyLimitBytes (64 KiB)'),
  ...busy('execution', perClient),
  500: execError('a fault of the service itself; no details'),
});

/** The execution routes, each path once: prepare and list, submit, deposit, read, cancel, the event stream. */
export function executionPaths(): Json {
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
        requestBody: {
          ...body('PrepareRequest'),
          content: { 'application/json': { schema: ref('PrepareRequest'), example: PREPARE_EXAMPLE } },
        },
        responses: {
          200: {
            ...answer(
              'the same prepare again (same executionId, intent, signer key, ttl and deposit): the existing record, nothing started',
              ref('ExecutionRecordAnswer'),
              {
                'Idempotent-Replayed': { description: 'always `true` on this answer', schema: { type: 'string', const: 'true' } },
              },
            ),
            links: executionLinks,
          },
          201: {
            ...answer('prepared; the record', ref('ExecutionRecordAnswer')),
            links: executionLinks,
          },
          400: execError(
            'path, body or intent invalid (also: not application/json, not JSON; an executionId that is a word of the execution routes: submit, events, deposit, cancel)',
          ),
          401: answer('no, malformed or unknown bearer token', ref('Error'), wwwAuthenticate),
          403: execError('the token lacks executions:prepare'),
          409: execError(
            'this executionId already exists for the wallet with another intent, signer key, ttl or deposit (its refundAddress included)',
          ),
          413: execError('body over bodyLimitBytes (64 KiB)'),
          ...busy('execution', perToken),
          500: execError('a fault of the service itself; no details'),
        },
      },
    },
    '/api/v1/executions/lookup': {
      post: {
        operationId: 'lookupExecutions',
        summary: 'Read up to 128 executions at once, each answered in the order asked',
        tags: ['executions'],
        security: [],
        description:
          "Public like the GET of one execution, and limited per client: each item costs one read of the client's budget. Served by the read model (written after every change, usually within a second). One item per execution asked: `{ record }` (with its statusReason) or its own `{ error, code }`: `NOT_FOUND` (no such execution for that wallet), `INVALID` (not a wallet and an execution id).",
        parameters: [param('requestId')],
        requestBody: body('LookupRequest'),
        responses: {
          200: answer('one item per execution asked, in that order', ref('LookupAnswer')),
          400: execError('body invalid: not JSON, no executions, more than 128, an item without wallet or executionId, an unknown field'),
          413: execError('body over bodyLimitBytes (64 KiB)'),
          ...busy('execution', perClient),
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
        description:
          'Needs the scope `executions:deposit`. On an execution with a depositTarget the report is believed only when the chain shows that transaction paying the target address, DEPOSIT_CONFIRMATIONS deep; the deposit stored is what the chain says. A 503 also means the chain node could not be asked.',
        parameters: [param('wallet'), param('executionId'), param('requestId')],
        requestBody: body('DepositRequest'),
        responses: {
          200: answer('recorded (the same txHash again is a no-op); the record', ref('ExecutionRecordAnswer')),
          400: execError('path or body invalid'),
          401: answer('no, malformed or unknown bearer token', ref('Error'), wwwAuthenticate),
          403: execError('the token lacks executions:deposit'),
          404: execError('no such execution for this wallet'),
          409: execError(
            'another txHash is stored, or the execution is EXPIRED or CANCELLED (owed back: a refunds ledger row, and refusedDeposits while fewer than 10); or, with a depositTarget, the chain does not back the report, or the transfer it names was sent by the service itself from a deposit address (nothing written)',
          ),
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
          ...signedActionAnswers(''),
          409: execError('the execution is SIGNING or EXPIRED and can no longer be cancelled'),
        },
      },
    },
    '/api/v1/executions/{wallet}/{executionId}/refund-address': {
      post: {
        operationId: 'setRefundAddress',
        summary: "Set where refunds of the execution's own deposit go (signed by the wallet; no token)",
        tags: ['executions'],
        security: [],
        description:
          "The signer key signs (UTF-8, ed25519) `{domain} asks you to send refunds of execution {executionId} to {refundAddress}\\nWallet: {address}\\nTimestamp: {timestamp}`. The address then receives the refund of the execution's own deposit and of every transfer to the execution from that deposit's payer, never another payer's. A row held for want of a destination that it covers is due again. Changeable by a newer command until a refund of the execution is paying.",
        parameters: [param('wallet'), param('executionId'), param('requestId')],
        requestBody: body('RefundAddressRequest'),
        responses: {
          200: answer('set (or the same command again: nothing written); the address in force', ref('OwnerRefundAnswer')),
          ...signedActionAnswers(
            '; a refundAddress with a wrong checksum, the zero address, a precompile or a deposit address of this service',
          ),
          409: execError(
            '`REFUND_ADDRESS_STALE`: a command as new or newer is in force; `REFUND_PAYING`: a refund of the execution is being paid; `NO_DEPOSIT`: the execution holds no deposit yet; `NO_DEPOSIT_TARGET`: it has no deposit address',
          ),
        },
      },
    },
    '/api/v1/executions/{wallet}/{executionId}/events': {
      get: {
        operationId: 'executionEvents',
        summary: 'Server-Sent Events: the record and its refunds now, then at every change, until nothing more can change',
        tags: ['executions'],
        security: [],
        description:
          "Two kinds of event: `event: status` with `data: <execution record JSON>` (ExecutionRecord, without its refunds summary), and `event: refund` with `data: <one of its refunds ledger rows JSON>` (ExecutionRefund: state, holdReason while held, refundTxHash once refunded) for each of the record's first 10 rows that is new or changed. The first events are the current record and its rows; then at every change, in each write the statuses that came and went, the refunds, then the current record. The last event of each write carries the stream's position as its id: `<record version>`, or `<record version>.<16 hex digits naming the rows>` once there are rows. The stream ends after SIGNING, EXPIRED or CANCELLED once none of the rows is due, held or paying. A reconnect whose `Last-Event-ID` is the position of such an end is answered 204, which stops an EventSource; one with an older position gets the current record if it has another version, and every row again if the rows changed since.",
        parameters: [
          param('wallet'),
          param('executionId'),
          {
            name: 'Last-Event-ID',
            in: 'header',
            required: false,
            description:
              'the id of the last event received (EventSource sends it on reconnect): what it names (the record, the rows) is not sent again',
            schema: { type: 'string' },
          },
          param('requestId'),
        ],
        responses: {
          200: {
            description: 'the event stream',
            headers: requestIdHeader,
            content: { 'text/event-stream': { schema: sseEventSchema } },
          },
          204: {
            description: 'the final record and its settled refunds were already received (Last-Event-ID): nothing more will come',
            headers: requestIdHeader,
          },
          400: execError('path invalid'),
          404: execError('no such execution for this wallet'),
          ...busy('execution', perClient),
          500: execError('a fault of the service itself; no details'),
        },
      },
    },
  };
}

/**
 * A signed body (submit, cancel) as the route checks it, with the configured domains declared as
 * the enum `connectEnvelope.domain` is held to.
 */
export function withAllowedDomains(
  body: typeof submitBodySchema | typeof cancelBodySchema | typeof refundAddressBodySchema,
  allowedDomains: readonly string[],
): Json {
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

/** The path and query parameters the execution operations refer to, as OpenAPI components. */
export const executionParameters = {
  wallet: {
    name: 'wallet',
    in: 'path',
    required: true,
    description: 'the wallet (by default also the signer key, base58)',
    schema: walletParamSchema,
    example: EXAMPLE_WALLET,
  },
  executionId: { name: 'executionId', in: 'path', required: true, schema: executionIdParamSchema, example: PREPARE_EXAMPLE.executionId },
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
};
