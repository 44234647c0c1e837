/**
 * JSON Schemas of every request the API accepts. The routes validate with them (ajv, strict) and
 * the OpenAPI document is built from them, so the two cannot drift.
 */
import { EOA_PATTERN, EXECUTION_ID_PATTERN, PUBLIC_KEY_PATTERN, SIGNATURE_PATTERN, TIME_PATTERN, WALLET_PATTERN } from '../contracts/ids';

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
    executionId: { type: 'string', pattern: EXECUTION_ID_PATTERN },
    intent: { type: 'object', description: 'any JSON object, nested at most 32 levels' },
    signerPublicKey: publicKeySchema('the key that must sign the submit (default: the wallet read as a base58 key)'),
    ttlSeconds: { type: 'integer', minimum: 1, maximum: 2592000 },
    deposit: {
      type: 'object',
      additionalProperties: false,
      required: ['chain', 'asset', 'minAmount'],
      description:
        'an on-chain deposit: the record gets depositTarget.address, unique to this execution; a native transfer of at least minAmount to it completes the deposit once DEPOSIT_CONFIRMATIONS deep',
      properties: {
        chain: {
          type: 'string',
          pattern: '^evm:[1-9][0-9]{0,18}$',
          description: '`evm:<chainId>`: the chain this service watches (CHAIN_RPC_URL)',
        },
        asset: { type: 'string', enum: ['native'], description: "the chain's native coin (ERC-20 tokens are not yet accepted)" },
        minAmount: { type: 'string', pattern: '^(0|[1-9][0-9]{0,77})$', description: 'wei, a decimal string' },
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

/** Upper bound on nesting of `intent`: canonicalisation recurses, so depth is bounded before it. */
export const MAX_INTENT_DEPTH = 32;

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
