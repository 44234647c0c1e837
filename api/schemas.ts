/**
 * JSON Schemas of every request the API accepts. The routes validate with them (ajv, strict) and
 * the OpenAPI document is built from them, so the two cannot drift.
 */

export const WALLET_PATTERN = '^[A-Za-z0-9._-]{1,128}$';
export const EXECUTION_ID_PATTERN = '^[A-Za-z0-9._-]{1,128}$';

export const walletParamSchema = { type: 'string', pattern: WALLET_PATTERN } as const;
export const executionIdParamSchema = { type: 'string', pattern: EXECUTION_ID_PATTERN } as const;

export const prepareBodySchema = {
  $id: 'PrepareRequest',
  type: 'object',
  additionalProperties: false,
  required: ['intent'],
  properties: {
    executionId: { type: 'string', pattern: EXECUTION_ID_PATTERN },
    intent: { type: 'object' },
    signerPublicKey: { type: 'string', minLength: 1, maxLength: 200 },
    ttlSeconds: { type: 'integer', minimum: 1, maximum: 2592000 },
  },
} as const;

export const submitBodySchema = {
  $id: 'SubmitRequest',
  type: 'object',
  additionalProperties: false,
  required: ['executionId', 'publicKey', 'signature', 'connectEnvelope'],
  properties: {
    executionId: { type: 'string', pattern: EXECUTION_ID_PATTERN },
    publicKey: { type: 'string', minLength: 1, maxLength: 200 },
    signature: { type: 'string', minLength: 1, maxLength: 300 },
    connectEnvelope: {
      type: 'object',
      additionalProperties: false,
      required: ['address', 'domain', 'timestamp'],
      properties: {
        address: { type: 'string', minLength: 1, maxLength: 128 },
        domain: { type: 'string', minLength: 1, maxLength: 253 },
        timestamp: { type: 'integer', minimum: 0, maximum: 253402300799 },
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
    amount: { type: 'string', pattern: '^[0-9]{1,78}(\\.[0-9]{1,78})?$' },
  },
} as const;

export const whitelistChangeSchema = {
  $id: 'WhitelistChange',
  type: 'object',
  additionalProperties: false,
  required: ['op_type', 'kind', 'entry'],
  properties: {
    op_type: { type: 'string', enum: ['add_entry', 'remove_entry'] },
    kind: { type: 'string', enum: ['developer', 'user'] },
    entry: { type: 'string', minLength: 1, maxLength: 64 },
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

/** Upper bound on nesting of `intent`: canonicalisation recurses, so depth is bounded before it. */
export const MAX_INTENT_DEPTH = 32;
