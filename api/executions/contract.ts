/**
 * The execution routes' contract, written once: the request schemas the routes validate with
 * (ajv, strict), the answers they send, and their OpenAPI operations (api/operations/openapi.ts
 * assembles the document from them).
 */
import { HOLD_REASONS, REFUND_STATES } from '../../contracts/refunds';
import { EXECUTION_ID_PATTERN, PUBLIC_KEY_PATTERN, SIGNATURE_PATTERN, WALLET_PATTERN } from '../../contracts/ids';
import { EXECUTION_STATUSES } from '../../domain/execution-state';
import { BASE_UNITS_PATTERN } from '../../domain/wei';
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

// ---- requests ----

export const walletParamSchema = { type: 'string', pattern: WALLET_PATTERN } as const;
export const executionIdParamSchema = { type: 'string', pattern: EXECUTION_ID_PATTERN } as const;

const publicKeySchema = (role: string) =>
  ({
    type: 'string',
    pattern: PUBLIC_KEY_PATTERN,
    description: `${role}: an ed25519 public key; base58 text must decode to exactly 32 bytes, the key must be a point on the curve and not a small-order key`,
  }) as const;

export const prepareBodySchema = {
  $id: 'PrepareRequest',
  type: 'object',
  additionalProperties: false,
  required: ['intent'],
  properties: {
    executionId: {
      type: 'string',
      pattern: EXECUTION_ID_PATTERN,
      description: 'absent: the service generates one; never reused for this wallet',
    },
    intent: { type: 'object', description: 'any JSON object, nested at most 32 levels' },
    signerPublicKey: publicKeySchema('the key that must sign the submit (default: the wallet read as a base58 key)'),
    ttlSeconds: { type: 'integer', minimum: 1, maximum: 2592000, description: 'how long a deposit may take (absent: EXECUTION_TTL_S)' },
    deposit: {
      type: 'object',
      additionalProperties: false,
      required: ['chain', 'asset', 'minAmount'],
      description:
        'an on-chain deposit: the record gets depositTarget.address, unique to this execution; a transfer of at least minAmount of asset to it completes the deposit once DEPOSIT_CONFIRMATIONS deep',
      properties: {
        chain: {
          type: 'string',
          pattern: '^evm:[1-9][0-9]{0,18}$',
          description: '`evm:<chainId>`: the chain this service watches (CHAIN_RPC_URL)',
        },
        asset: {
          type: 'string',
          pattern: '^(native|erc20:0x[0-9a-fA-F]{40})$',
          description: "`native` (the chain's coin), or `erc20:<token address>` for a token the deployment allows (DEPOSIT_TOKENS)",
        },
        minAmount: {
          type: 'string',
          pattern: '^[1-9][0-9]{0,77}$',
          description:
            "base units of asset (wei; a token's smallest unit), a decimal string, at least 1 (a target of 0 would take any transfer, of any size, as the deposit)",
        },
        refundAddress: {
          type: 'string',
          pattern: '^0x[0-9a-fA-F]{40}$',
          description:
            "where the service pays back deposits to this execution that it does not take (absent: each transfer's payer; a payer with code, or none the chain showed, waits for a person). EIP-55 checked when in mixed case; never a deposit address of this service, this execution's included (400)",
        },
      },
    },
  },
} as const;

export const submitBodySchema = {
  $id: 'SubmitRequest',
  type: 'object',
  additionalProperties: false,
  required: ['executionId', 'publicKey', 'signature', 'connectEnvelope'],
  properties: {
    executionId: { type: 'string', pattern: EXECUTION_ID_PATTERN },
    publicKey: publicKeySchema("the execution's signer key"),
    signature: {
      type: 'string',
      pattern: SIGNATURE_PATTERN,
      description: 'ed25519 signature of the signing message; base58 text must decode to exactly 64 bytes',
    },
    connectEnvelope: {
      type: 'object',
      additionalProperties: false,
      required: ['address', 'domain', 'timestamp'],
      properties: {
        address: { type: 'string', pattern: WALLET_PATTERN, description: 'must equal the {wallet} path parameter' },
        domain: { type: 'string', minLength: 1, maxLength: 253, description: 'one of the configured allowed domains' },
        timestamp: {
          type: 'integer',
          minimum: 0,
          maximum: 253402300799,
          description: "Unix seconds, at most envelopeMaxAgeS (300) from the server's clock",
        },
      },
    },
  },
} as const;

export const depositBodySchema = {
  $id: 'DepositRequest',
  type: 'object',
  additionalProperties: false,
  required: ['txHash'],
  properties: {
    txHash: { type: 'string', minLength: 1, maxLength: 200 },
    chain: { type: 'string', minLength: 1, maxLength: 64 },
    amount: {
      type: 'string',
      pattern: BASE_UNITS_PATTERN,
      description:
        "base units of the asset (wei; a token's smallest unit): a decimal integer, `0` or digits without a leading zero, at most 2^256 − 1",
    },
    transferIndex: {
      type: 'integer',
      minimum: 0,
      maximum: 1000000,
      description:
        "the transfer's place in its transaction (default 0): 0 for a top-level native transfer, 1, 2, … for value moved by its internal calls in call order, a token transfer's place among the receipt's logs",
    },
    asset: {
      type: 'string',
      pattern: '^(native|erc20:0x[0-9a-fA-F]{40})$',
      description: "what the transfer moved (default: the deposit target's asset); the record keeps what the chain shows",
    },
  },
} as const;

/** Upper bound on nesting of `intent`: canonicalisation recurses, so depth is bounded before it. */
export const MAX_INTENT_DEPTH = 32;

/** The cancel body: the wallet's signature of the cancel message and its envelope (as submit's, without executionId). */
export const cancelBodySchema = {
  $id: 'CancelRequest',
  type: 'object',
  additionalProperties: false,
  required: ['publicKey', 'signature', 'connectEnvelope'],
  properties: {
    publicKey: submitBodySchema.properties.publicKey,
    signature: {
      ...submitBodySchema.properties.signature,
      description: 'ed25519 signature of the cancel message; base58 text must decode to exactly 64 bytes',
    },
    connectEnvelope: submitBodySchema.properties.connectEnvelope,
  },
} as const;

/** Page sizes of the list route. */
export const PAGE_SIZE = { min: 1, max: 100, default: 20 } as const;

/**
 * The list route's query string as Koa parses it (every value a string; a repeated parameter
 * becomes an array, which is refused). Statuses and the page size are checked further by the route.
 */
export const listQuerySchema = {
  $id: 'ListQuery',
  type: 'object',
  additionalProperties: false,
  properties: {
    status: { type: 'string', pattern: '^[A-Z_]{1,32}(,[A-Z_]{1,32}){0,9}$', description: 'comma-separated statuses' },
    pageSize: { type: 'string', pattern: '^[0-9]{1,3}$' },
    pageToken: { type: 'string', minLength: 1, maxLength: 400 },
  },
} as const;

// ---- answers ----

const statusEnum = { type: 'string', enum: [...EXECUTION_STATUSES] } as const;
const isoTime = { type: 'string', format: 'date-time' } as const;
/** What the chain watcher adds to a deposit it signals, and what a deep reorg marks. */
const chainDepositFields = {
  blockNumber: { type: 'integer', minimum: 0, description: 'the block of the transfer (deposits the chain watcher signalled)' },
  transferIndex: {
    type: 'integer',
    minimum: 0,
    description:
      "the transfer's place in its transaction: 0 for a top-level native transfer, 1, 2, … for value its internal calls moved, a token transfer's place among the receipt's logs",
  },
  asset: {
    type: 'string',
    pattern: '^(native|erc20:0x[0-9a-f]{40})$',
    description: 'what the transfer moved, as the chain shows it (deposits to a depositTarget)',
  },
  reorged: {
    const: true,
    description:
      'set while the block of this deposit is reorganised away after the watcher signalled it (deeper than the confirmations), cleared when the same transfer is mined again and confirmed: an operator decides meanwhile',
  },
  reorgs: {
    type: 'integer',
    minimum: 1,
    description: "how often the chain's word on this deposit changed (reorganised away, mined again)",
  },
} as const;
/** A deposit has the shape of the deposit request. */
const deposit = { ...depositBodySchema, $id: undefined };
/** The stored deposit: the request's fields, and `refundDue` once the execution was cancelled after it. */
const storedDeposit = {
  ...deposit,
  properties: {
    ...deposit.properties,
    refundDue: { const: true, description: 'set when the execution was cancelled after this deposit: an operator refunds it' },
    ...chainDepositFields,
  },
};

export const executionRecordSchema = {
  type: 'object',
  required: [
    'executionId',
    'wallet',
    'status',
    'intent',
    'intentHash',
    'signerPublicKey',
    'createdAt',
    'updatedAt',
    'expiresAt',
    'history',
    'refusedDeposits',
  ],
  properties: {
    executionId: { type: 'string', description: "prepare's executionId, or the one it generated" },
    wallet: { type: 'string', description: 'the origin wallet of the path' },
    status: { ...statusEnum, description: 'PREPARED, OPERATION_PENDING, SIGNING, EXPIRED or CANCELLED (docs/api.md "Lifecycle")' },
    intent: { type: 'object', description: 'the intent as prepare received it' },
    intentHash: {
      type: 'string',
      pattern: '^[0-9a-f]{64}$',
      description: 'lowercase hex SHA-256 of the RFC 8785 canonical JSON of intent',
    },
    signerPublicKey: {
      type: 'string',
      description: 'the ed25519 key that must sign, `0x` + 64 lowercase hex digits (prepare: signerPublicKey, else the wallet)',
    },
    signingMessage: { type: 'string', description: 'set by a valid submit: the exact message that was verified' },
    depositTarget: {
      type: 'object',
      required: ['chain', 'asset', 'minAmount', 'address'],
      description: "where an on-chain deposit goes (prepare's `deposit`): a transfer of at least minAmount to address completes it",
      properties: {
        chain: { type: 'string' },
        asset: { type: 'string', pattern: '^(native|erc20:0x[0-9a-f]{40})$', description: '`native` or `erc20:<token address>`' },
        minAmount: { type: 'string', description: 'base units of asset' },
        address: { type: 'string', pattern: '^0x[0-9a-fA-F]{40}$', description: 'EIP-55, unique to this execution' },
        refundAddress: {
          type: 'string',
          pattern: '^0x[0-9a-fA-F]{40}$',
          description: "EIP-55: prepare's deposit.refundAddress, where deposits to address that the execution does not take are paid back",
        },
      },
    },
    deposit: { ...storedDeposit, description: 'set by the deposit the execution took (a report, a signal or the chain watcher)' },
    signedPayload: {
      type: 'object',
      description: "set by a valid submit: the signature (canonical hex), the signer key, the wallet's envelope, when",
      required: ['signature', 'publicKey', 'connectEnvelope', 'submittedAt'],
      properties: {
        signature: { type: 'string', pattern: '^0x[0-9a-f]{128}$' },
        publicKey: { type: 'string', pattern: '^0x[0-9a-f]{64}$' },
        connectEnvelope: {
          type: 'object',
          required: ['address', 'domain', 'timestamp'],
          properties: { address: { type: 'string' }, domain: { type: 'string' }, timestamp: { type: 'integer' } },
        },
        submittedAt: isoTime,
      },
    },
    createdAt: { ...isoTime, description: 'when prepare created it' },
    updatedAt: { ...isoTime, description: 'the last change of the record' },
    expiresAt: { ...isoTime, description: 'createdAt + ttlSeconds: PREPARED without a deposit by then becomes EXPIRED' },
    signingDeadline: {
      ...isoTime,
      description:
        'set when the deposit moved it to OPERATION_PENDING (+ SIGNING_DEADLINE_S): without a signature by then it becomes EXPIRED and its deposit is owed back (refunds reason unsigned-by-deadline)',
    },
    history: {
      description: 'every status change with its time, oldest first',
      type: 'array',
      items: { type: 'object', required: ['status', 'at'], properties: { status: statusEnum, at: isoTime } },
    },
    refusedDeposits: {
      type: 'array',
      description:
        'the first 10 deposits the execution did not take (expired, cancelled, another txHash, less than the deposit target minAmount, another chain, another asset); every one is a refunds ledger row (see refunds)',
      items: {
        ...deposit,
        additionalProperties: true,
        required: ['txHash', 'at', 'reason'],
        properties: {
          ...deposit.properties,
          ...chainDepositFields,
          at: isoTime,
          reason: { type: 'string', enum: ['expired', 'other-tx', 'cancelled', 'below-minimum', 'wrong-chain', 'wrong-asset'] },
        },
      },
    },
    refutedClaims: {
      type: 'array',
      description:
        'the first 10 deposit claims (signals) the chain refuted: no such transaction, reverted, not to this address, no value, another token, a transfer the service sent itself (paid by one of its deposit addresses or its gas account: a refund, a cancel or a gas top-up; `service-transfer`), or not shown after about half an hour (unproven); never owed: no money arrived from anyone else',
      items: {
        type: 'object',
        required: ['txHash', 'reason', 'at'],
        properties: {
          txHash: { type: 'string' },
          transferIndex: { type: 'integer', minimum: 0 },
          asset: { type: 'string' },
          reason: { type: 'string' },
          at: isoTime,
        },
      },
    },
    refunds: {
      type: 'object',
      required: ['total', 'url'],
      description:
        "set on the read routes' answers (GET one, the list) when the read model answers: refusedDeposits holds the first 10 refusals, the refunds ledger holds every deposit not taken",
      properties: {
        total: {
          type: 'integer',
          minimum: 0,
          description: "this execution's rows in the refunds ledger (its own deposit after a cancel included)",
        },
        url: { type: 'string', description: 'GET it with a refunds:read token to list them: /api/v1/refunds?wallet=…&executionId=…' },
        rows: {
          type: 'array',
          maxItems: 10,
          description:
            'on GET of one execution: its first 10 rows, oldest first, as the depositor sees them: each transfer not taken, what became of it (state; holdReason while a person must decide) and the refund transaction once paid',
          items: ref('ExecutionRefund'),
        },
      },
    },
  },
} as const;

/**
 * One refunds ledger row as the depositor sees it: in the record's `refunds.rows` and as the data
 * of the event stream's `refund` events.
 */
export const executionRefundSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'txHash', 'transferIndex', 'reason', 'state'],
  description:
    'a transfer the execution did not take (or its own deposit, owed back after a cancel or a missed signing deadline) and what became of it: no operator fields',
  properties: {
    id: { type: 'string', description: 'the refunds ledger row' },
    txHash: { type: 'string', description: "the transfer's transaction" },
    transferIndex: { type: 'integer', minimum: 0 },
    asset: { type: 'string', description: '`native` or `erc20:<token address>`' },
    amount: { type: 'string', description: 'base units' },
    reason: { type: 'string', description: 'why it is owed back' },
    state: {
      type: 'string',
      enum: [...REFUND_STATES],
      description:
        '`due` (the service pays it), `held` (a person decides: holdReason), `paying` (its refund is sent), `refunded`, `waived`, `void`',
    },
    holdReason: { type: 'string', enum: [...HOLD_REASONS], description: 'set while held: why a person must act' },
    refundTxHash: { type: 'string', description: 'set once refunded: the refund transaction' },
    refundValue: {
      type: 'string',
      description:
        "set once the service's refund is mined: the base units it paid, a native refund's amount less its fee (wei), a token refund's whole amount",
    },
  },
} as const;

export const recordAnswerSchema = {
  type: 'object',
  required: ['result'],
  properties: { result: { $ref: '#/components/schemas/ExecutionRecord' } },
} as const;

export const listAnswerSchema = {
  type: 'object',
  required: ['result'],
  properties: {
    result: {
      type: 'array',
      items: { $ref: '#/components/schemas/ExecutionRecord' },
      description: 'newest first (createdAt, then executionId, descending)',
    },
    nextPageToken: { type: 'string', description: 'absent on the last page; pass as pageToken for the next one' },
  },
} as const;

export const submitAnswerSchema = {
  type: 'object',
  required: ['result'],
  properties: {
    result: { type: 'object', required: ['status'], properties: { status: { type: 'string', enum: ['SIGNING', 'PREPARED'] } } },
  },
} as const;

/** Executions' error body. */
export const errorSchema = {
  type: 'object',
  required: ['error'],
  properties: {
    error: { type: 'string' },
    code: {
      type: 'string',
      description:
        'a stable name for the refusal, e.g. `CAPACITY_FULL` (503: the service holds all the open executions it may), `WALLET_CAPACITY_FULL` (429: this wallet holds its share), `RATE_LIMITED`, `UNAVAILABLE`, `EXPIRED`, `ALREADY_EXISTS`',
    },
  },
} as const;

// ---- operations ----

/** From prepare's 201 to the calls a client makes next on the same execution (OpenAPI links). */
const executionLinks = Object.fromEntries(
  (
    [
      ['getExecution', 'read the execution just prepared'],
      ['executionEvents', 'follow the status changes of the execution just prepared (Server-Sent Events)'],
      ['depositExecution', 'the deposit of the execution just prepared'],
      ['submitExecution', 'submit the signature of the execution just prepared (its executionId goes in the body)'],
      ['cancelExecution', 'the cancel of the execution just prepared'],
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

/** The execution routes (DESIGN.md "Executions"). */
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
        requestBody: body('PrepareRequest'),
        responses: {
          200: answer(
            'the same prepare again (same executionId, intent, signer key, ttl and deposit): the existing record, nothing started',
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
          409: execError(
            'this executionId already exists for the wallet with another intent, signer key, ttl or deposit (its refundAddress included)',
          ),
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
  };
}

/** Cancel and the SSE stream of one execution. */
export function executionExtraPaths(): Json {
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
            content: { 'text/event-stream': { schema: { type: 'string' } } },
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
export function withAllowedDomains(body: typeof submitBodySchema | typeof cancelBodySchema, allowedDomains: readonly string[]): Json {
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
};
