/**
 * What the execution routes accept: the schemas they validate with (ajv, strict), which are also
 * the OpenAPI document's (api/operations/openapi.ts), and the request types derived from them.
 */
import {
  EXECUTION_ID_PATTERN,
  NEW_EXECUTION_ID_PATTERN,
  PUBLIC_KEY_PATTERN,
  SIGNATURE_PATTERN,
  WALLET_PARAM_PATTERN,
  WALLET_PATTERN,
} from '../../contracts/ids';
import type { DepositAsset } from '../../domain/execution-state';
import { BASE_UNITS_PATTERN } from '../../domain/wei';
import type { FromSchema } from '../http/schema-type';

export const walletParamSchema = { type: 'string', pattern: WALLET_PARAM_PATTERN } as const;
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
      pattern: NEW_EXECUTION_ID_PATTERN,
      description:
        'absent: the service generates one; never reused for this wallet; never a word of the execution routes (submit, events, deposit, cancel)',
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
            "where the service pays back deposits to this execution that it does not take (absent: each transfer's payer; a payer with code, or none the chain showed, waits for a person). EIP-55 checked when in mixed case; never a deposit address of this service, this execution's included, the zero address or a precompile (0x…01 to 0x…ff) (400)",
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

/** The owner's command that sets where refunds of its execution go (signed like cancel). */
export const refundAddressBodySchema = {
  $id: 'RefundAddressRequest',
  type: 'object',
  additionalProperties: false,
  required: ['refundAddress', 'publicKey', 'signature', 'connectEnvelope'],
  properties: {
    refundAddress: {
      type: 'string',
      pattern: '^0x[0-9a-fA-F]{40}$',
      description:
        "where refunds of the execution's own deposit, and of the transfers of its payer, go: EIP-55 checked when in mixed case; never a deposit address of this service, the zero address or a precompile",
    },
    publicKey: submitBodySchema.properties.publicKey,
    signature: {
      ...submitBodySchema.properties.signature,
      description: 'ed25519 signature of the refund address message; base58 text must decode to exactly 64 bytes',
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

export type PrepareRequest = FromSchema<typeof prepareBodySchema>;
export type SubmitRequest = FromSchema<typeof submitBodySchema>;
/** The cancel route's body: the wallet's signature of the cancel message, with its envelope. */
export type CancelRequest = FromSchema<typeof cancelBodySchema>;
export type RefundAddressRequest = FromSchema<typeof refundAddressBodySchema>;
/** The list route's query string, before its statuses and page size are read. */
export type ListQuery = FromSchema<typeof listQuerySchema>;
/** A reported deposit; the schema's asset pattern spells a DepositAsset. */
export type DepositRequest = Omit<FromSchema<typeof depositBodySchema>, 'asset'> & { asset?: DepositAsset };

/** Most executions one lookup asks about. */
export const LOOKUP_MAX_ITEMS = 128;

/**
 * The batch lookup's body. Each item's wallet and executionId are only bounded here: an item that
 * is no valid pair is answered with its own error, not a 400 for the batch.
 */
export const lookupBodySchema = {
  $id: 'LookupRequest',
  type: 'object',
  additionalProperties: false,
  required: ['executions'],
  properties: {
    executions: {
      type: 'array',
      minItems: 1,
      maxItems: LOOKUP_MAX_ITEMS,
      description: `1 to ${LOOKUP_MAX_ITEMS} executions, answered in this order`,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['wallet', 'executionId'],
        properties: { wallet: { type: 'string', maxLength: 256 }, executionId: { type: 'string', maxLength: 256 } },
      },
    },
  },
} as const;

export interface LookupRequest {
  executions: Array<{ wallet: string; executionId: string }>;
}
