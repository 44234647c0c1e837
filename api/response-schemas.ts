/**
 * JSON Schemas of the API's answers, for the OpenAPI document (api/openapi.ts). The request
 * schemas live in api/schemas.ts, where the routes validate with them; these describe what the
 * routes send back, and the operability tests check real answers against them.
 */
import { depositBodySchema } from './schemas';

const statusEnum = { type: 'string', enum: ['PREPARED', 'OPERATION_PENDING', 'SIGNING', 'EXPIRED'] } as const;
const isoTime = { type: 'string', format: 'date-time' } as const;
/** A stored deposit has the shape of the deposit request. */
const deposit = { ...depositBodySchema, $id: undefined };

export const executionRecordSchema = {
  type: 'object',
  required: ['executionId', 'wallet', 'status', 'intent', 'intentHash', 'signerPublicKey', 'createdAt', 'updatedAt', 'expiresAt', 'history', 'refusedDeposits'],
  properties: {
    executionId: { type: 'string' },
    wallet: { type: 'string' },
    status: statusEnum,
    intent: { type: 'object' },
    intentHash: { type: 'string', pattern: '^[0-9a-f]{64}$', description: 'lowercase hex SHA-256 of the RFC 8785 canonical JSON of intent' },
    signerPublicKey: { type: 'string' },
    signingMessage: { type: 'string' },
    deposit,
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
      description: 'deposits the execution did not take (expired, or another txHash), kept for a refund',
      items: { ...deposit, additionalProperties: true, required: ['txHash', 'at', 'reason'], properties: { ...deposit.properties, at: isoTime, reason: { type: 'string', enum: ['expired', 'other-tx'] } } },
    },
  },
} as const;

export const recordAnswerSchema = { type: 'object', required: ['result'], properties: { result: { $ref: '#/components/schemas/ExecutionRecord' } } } as const;

export const submitAnswerSchema = {
  type: 'object',
  required: ['result'],
  properties: { result: { type: 'object', required: ['status'], properties: { status: { type: 'string', enum: ['SIGNING', 'PREPARED'] } } } },
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
  properties: { error: { const: 'Request Timeout' }, errorMessage: { type: 'string' }, result: { $ref: '#/components/schemas/WhitelistConfirmations' } },
} as const;

export const healthSchema = { type: 'object', required: ['ok'], properties: { ok: { const: true } } } as const;

export const readinessSchema = {
  type: 'object',
  required: ['ready', 'checks', 'down'],
  properties: {
    ready: { type: 'boolean' },
    checks: { type: 'object', description: '`temporal` and each storage node URL', additionalProperties: { type: 'string', enum: ['up', 'down'] } },
    down: { type: 'array', items: { type: 'string' }, description: 'the names of `checks` that are down' },
  },
} as const;
