/**
 * JSON Schemas of the API's answers, for the OpenAPI document (api/operations/openapi.ts). The request
 * schemas live in api/schemas.ts, where the routes validate with them; these describe what the
 * routes send back, and the operability tests check real answers against them.
 */
import { depositBodySchema } from './schemas';

const statusEnum = { type: 'string', enum: ['PREPARED', 'OPERATION_PENDING', 'SIGNING', 'EXPIRED', 'CANCELLED'] } as const;
const isoTime = { type: 'string', format: 'date-time' } as const;
/** What the chain watcher adds to a deposit it signals, and what a deep reorg marks. */
const chainDepositFields = {
  blockNumber: { type: 'integer', minimum: 0, description: 'the block of the transfer (deposits the chain watcher signalled)' },
  transferIndex: { type: 'integer', minimum: 0, description: "the transfer's place in its transaction: 0 for a native transfer" },
  reorged: {
    const: true,
    description:
      'set when the block of this deposit was reorganised away after the watcher signalled it (deeper than the confirmations): an operator decides',
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
    executionId: { type: 'string' },
    wallet: { type: 'string' },
    status: statusEnum,
    intent: { type: 'object' },
    intentHash: {
      type: 'string',
      pattern: '^[0-9a-f]{64}$',
      description: 'lowercase hex SHA-256 of the RFC 8785 canonical JSON of intent',
    },
    signerPublicKey: { type: 'string' },
    signingMessage: { type: 'string' },
    depositTarget: {
      type: 'object',
      required: ['chain', 'asset', 'minAmount', 'address'],
      description: "where an on-chain deposit goes (prepare's `deposit`): a transfer of at least minAmount to address completes it",
      properties: {
        chain: { type: 'string' },
        asset: { type: 'string', enum: ['native'] },
        minAmount: { type: 'string' },
        address: { type: 'string', pattern: '^0x[0-9a-fA-F]{40}$', description: 'EIP-55, unique to this execution' },
      },
    },
    deposit: storedDeposit,
    signedPayload: {
      type: 'object',
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
    createdAt: isoTime,
    updatedAt: isoTime,
    expiresAt: isoTime,
    history: { type: 'array', items: { type: 'object', required: ['status', 'at'], properties: { status: statusEnum, at: isoTime } } },
    refusedDeposits: {
      type: 'array',
      description:
        'deposits the execution did not take (expired, cancelled, another txHash, less than the deposit target minAmount, another chain), kept for a refund',
      items: {
        ...deposit,
        additionalProperties: true,
        required: ['txHash', 'at', 'reason'],
        properties: {
          ...deposit.properties,
          ...chainDepositFields,
          at: isoTime,
          reason: { type: 'string', enum: ['expired', 'other-tx', 'cancelled', 'below-minimum', 'wrong-chain'] },
        },
      },
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
export const errorSchema = { type: 'object', required: ['error'], properties: { error: { type: 'string' } } } as const;

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

export const healthSchema = { type: 'object', required: ['ok'], properties: { ok: { const: true } } } as const;

export const readinessSchema = {
  type: 'object',
  required: ['ready', 'checks', 'down'],
  properties: {
    ready: { type: 'boolean', description: 'this process can serve: Temporal answers and it is not shutting down' },
    checks: {
      type: 'object',
      required: ['temporal', 'process'],
      properties: { temporal: { type: 'string', enum: ['up', 'down'] }, process: { type: 'string', enum: ['serving', 'shutting-down'] } },
    },
    down: {
      type: 'array',
      items: { type: 'string', enum: ['temporal', 'process'] },
      description: 'the names of `checks` that make this process unready',
    },
  },
} as const;

// ---- whitelist reads ----

const eoa = { type: 'string', pattern: '^0x[0-9a-fA-F]{40}$' } as const;
const kind = { type: 'string', enum: ['developer', 'user'] } as const;
const opType = { type: 'string', enum: ['add_entry', 'remove_entry'] } as const;
const nextPageToken = { type: 'string', description: 'present when more follow: send it as pageToken (with the same filters)' } as const;

export const whitelistEntriesAnswerSchema = {
  type: 'object',
  required: ['result'],
  properties: {
    result: { type: 'array', items: eoa, description: 'EIP-55 entries, sorted case-insensitively, merged from every storage node' },
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
                description: 'the storage node that owns the entry: node-N, its place in STORAGE_NODES (never its address)',
              },
              state: {
                type: 'string',
                enum: ['applied', 'pending', 'reverted', 'not-applied', 'unknown'],
                description:
                  'pending: the node has not answered yet and is being retried; reverted: the batch failed and this change was undone; unknown: the workflow was stopped from outside first',
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
      description: 'applied changes, newest first, merged from every storage node',
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
            description: 'the storage node that applied it: node-N, its place in STORAGE_NODES (never its address)',
          },
          tokenId: { type: 'string', description: 'the token id the signed request to the node carried' },
          appliedAt: { ...isoTime, description: "the node's clock when it made the change durable" },
        },
      },
    },
    nextPageToken,
  },
} as const;
