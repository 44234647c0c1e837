/**
 * The refunds ledger routes' contract, written once: request schemas (ajv, strict), answers and
 * OpenAPI operations (api/operations/openapi.ts assembles the document from them).
 */
import { EXECUTION_ID_PATTERN, WALLET_PATTERN } from '../../contracts/ids';
import { TX_HASH_PATTERN } from '../../domain/deposit-proof';
import { HOLD_REASONS, REFUND_STATES } from '../../contracts/refunds';
import { answer, bearer, body, busy, execError, param, perToken, ref, wwwAuthenticate, type Json } from '../http/openapi-parts';

export const REFUND_PAGE_SIZE = { min: 1, max: 200, default: 50 } as const;

export const refundIdParamSchema = { type: 'string', pattern: '^[0-9a-f]{32}$' } as const;

export const refundListQuerySchema = {
  $id: 'RefundListQuery',
  type: 'object',
  additionalProperties: false,
  properties: {
    state: { type: 'string', enum: [...REFUND_STATES] },
    wallet: { type: 'string', pattern: WALLET_PATTERN },
    executionId: { type: 'string', pattern: EXECUTION_ID_PATTERN },
    chain: { type: 'string', pattern: '^[a-z0-9]{1,16}:[A-Za-z0-9_-]{1,64}$' },
    pageSize: { type: 'string', pattern: '^[0-9]{1,3}$' },
    pageToken: { type: 'string', minLength: 1, maxLength: 400 },
  },
} as const;

export const refundedBodySchema = {
  $id: 'RefundedRequest',
  type: 'object',
  additionalProperties: false,
  required: ['txHash'],
  properties: {
    txHash: {
      type: 'string',
      pattern: TX_HASH_PATTERN,
      description:
        'the refund transaction: an EVM transaction hash, `0x` + 64 hex digits in any case (stored lowercase); one refund transaction pays back rows of one deposit address only',
    },
  },
} as const;

export const waivedBodySchema = {
  $id: 'WaivedRequest',
  type: 'object',
  additionalProperties: false,
  required: ['reason'],
  properties: { reason: { type: 'string', minLength: 1, maxLength: 500, description: 'why nothing is paid back' } },
} as const;

export const approveBodySchema = {
  $id: 'ApproveRequest',
  type: 'object',
  additionalProperties: false,
  properties: {},
  description: 'an empty object: the approving token is recorded',
} as const;

const text = { type: 'string' } as const;
const isoTime = { type: 'string', format: 'date-time' } as const;

export const refundRowSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'workflowId', 'wallet', 'executionId', 'txHash', 'transferIndex', 'reason', 'reportedBy', 'state', 'createdAt'],
  properties: {
    id: refundIdParamSchema,
    workflowId: text,
    wallet: text,
    executionId: text,
    chain: text,
    txHash: text,
    transferIndex: { type: 'integer', minimum: 0 },
    amount: { type: 'string', description: 'base units, a decimal string' },
    asset: text,
    sender: {
      type: 'string',
      pattern: '^0x[0-9a-f]{40}$',
      description:
        "who paid the transfer (lowercase), when the chain showed it: a token Transfer log's from, an internal call's frame from, or the transaction's sender for its own value (transferIndex 0); where a refund goes back",
    },
    payerKind: {
      type: 'string',
      enum: ['eoa', 'contract'],
      description:
        'whether the sender has code: contract (a contract wallet, forwarder or relayer contract; a refund to it may never reach a person, so it waits for one), or eoa (no code, or an EIP-7702 delegation)',
    },
    reason: {
      type: 'string',
      description:
        'the refusal: expired, cancelled, other-tx, below-minimum, wrong-chain, wrong-asset, closed, cancelled-after-deposit, unsigned-by-deadline',
    },
    reportedBy: { type: 'string', enum: ['api', 'chain-watcher', 'execution'] },
    state: { type: 'string', enum: [...REFUND_STATES] },
    createdAt: isoTime,
    settledAt: isoTime,
    settledBy: { type: 'string', description: 'the id of the token that settled it' },
    refundTxHash: text,
    waivedReason: text,
    transfers: {
      type: 'integer',
      minimum: 1,
      description: 'how many transfers the row stands for: above 1, a dust batch (txHash is then the block hash)',
    },
    holdReason: {
      type: 'string',
      enum: [...HOLD_REASONS],
      description: 'set while held: why a person must pay it back (or waive it) instead of the service',
    },
    voidedAt: { ...isoTime, description: 'set while void: when a reorganisation removed its transfer' },
    voidReason: { type: 'string', enum: ['reorged'] },
    refundNonce: {
      type: 'integer',
      minimum: 0,
      description:
        "set once the service signed its refund: the deposit address's nonce it uses (rows of one address, asset and destination paid by one transaction share it, and their variants)",
    },
    refundTo: { type: 'string', pattern: '^0x[0-9a-f]{40}$', description: "where the service's refund goes (lowercase)" },
    refundVariants: {
      type: 'array',
      description:
        'every transaction the service signed for its nonce (a replacement at a higher fee, or a cancel), in order; the one mined is the refund',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['kind', 'hash', 'raw', 'to', 'value', 'gas', 'signedAt'],
        properties: {
          kind: { type: 'string', enum: ['refund', 'cancel'] },
          hash: text,
          raw: text,
          to: { type: 'string', description: "the transaction's to: the destination, or a token refund's token contract" },
          data: { type: 'string', description: "a token refund's call data: transfer(destination, amount)" },
          value: { type: 'string', description: 'wei' },
          gas: text,
          maxFeePerGas: text,
          maxPriorityFeePerGas: text,
          gasPrice: text,
          signedAt: isoTime,
          sentAtBlock: { type: 'integer', minimum: 0 },
        },
      },
    },
    refundBlock: { type: 'integer', minimum: 0, description: "set once the service's refund nonce is mined: its block" },
    refundValue: {
      type: 'string',
      description:
        "base units the mined refund paid for this row: a native refund's amount less its fee (wei; rows paid by one transaction share what it sent in proportion to their amounts), a token refund's whole amount",
    },
    gasLeft: {
      type: 'string',
      description: "a token refund's, once mined: wei the gas account's top-ups left on the deposit address (topped up less the fee)",
    },
    feesSpent: {
      type: 'string',
      description:
        "wei the service's transactions that paid nobody (a cancel, a refund mined with status 0) cost, out of the amount: a later refund pays that much less",
    },
    approvedBy: { type: 'string', description: "set once approved above the chain's limit: the approving token's id" },
    approvedAt: isoTime,
  },
} as const;

const rowAnswer = { type: 'object', additionalProperties: false, required: ['result'], properties: { result: ref('RefundRow') } };
const listAnswer = {
  type: 'object',
  additionalProperties: false,
  required: ['result'],
  properties: { result: { type: 'array', items: ref('RefundRow') }, nextPageToken: text },
};

const idParam = { name: 'id', in: 'path', required: true, description: 'the row id from the list', schema: refundIdParamSchema };
const query = (name: string, description: string, schema: Json) => ({ name, in: 'query', required: false, description, schema });
const authAnswers = (scope: string) => ({
  401: answer('no, malformed or unknown bearer token', ref('Error'), wwwAuthenticate),
  403: execError(`the token lacks ${scope}`),
});

const settleOperation = (operationId: string, summary: string, request: string) => ({
  operationId,
  summary,
  tags: ['refunds'],
  security: bearer,
  description:
    'Needs the scope `refunds:write`. The same settlement again answers 200 and writes nothing; another one for a settled row is 409. The token that settled it is recorded.',
  parameters: [idParam, param('requestId')],
  requestBody: body(request),
  responses: {
    200: answer('settled (or settled the same way before); the row', ref('RefundRowAnswer')),
    400: execError('path or body invalid'),
    ...authAnswers('refunds:write'),
    404: execError('no such row'),
    409: execError(
      'the row was settled otherwise before (REFUND_SETTLED), the service is paying it (REFUND_PAYING: its transaction is out), the refund transaction already pays back a row of another deposit address (REFUND_TX_USED), or a waiver of a row whose refund nonce a transaction the service did not sign took (REFUND_NONCE_TAKEN: settle it refunded, with the transaction that paid it)',
    ),
    413: execError('body over bodyLimitBytes (64 KiB)'),
    ...busy('execution', perToken),
    500: execError('a fault of the service itself; no details'),
  },
});

export function refundPaths(): Json {
  return {
    '/api/v1/refunds': {
      get: {
        operationId: 'listRefunds',
        summary: 'The refunds ledger: every deposit the service did not take, newest first',
        tags: ['refunds'],
        security: bearer,
        description: 'Needs the scope `refunds:read`. Read from the read model (a 503 while it is down).',
        parameters: [
          query('state', REFUND_STATES.join(', '), refundListQuerySchema.properties.state),
          query('wallet', 'only this wallet', refundListQuerySchema.properties.wallet),
          query(
            'executionId',
            "only this execution id (an execution record's refundsUrl names it with its wallet)",
            refundListQuerySchema.properties.executionId,
          ),
          query('chain', 'only this chain (`evm:<id>`)', refundListQuerySchema.properties.chain),
          query('pageSize', `${REFUND_PAGE_SIZE.min}-${REFUND_PAGE_SIZE.max}, default ${REFUND_PAGE_SIZE.default}`, {
            type: 'integer',
            minimum: REFUND_PAGE_SIZE.min,
            maximum: REFUND_PAGE_SIZE.max,
            default: REFUND_PAGE_SIZE.default,
          }),
          query('pageToken', "the previous page's nextPageToken", refundListQuerySchema.properties.pageToken),
          param('requestId'),
        ],
        responses: {
          200: answer('one page of rows', ref('RefundList')),
          400: execError('query invalid, or a pageToken this API did not issue'),
          ...authAnswers('refunds:read'),
          ...busy('execution', perToken),
          500: execError('a fault of the service itself; no details'),
        },
      },
    },
    '/api/v1/refunds/{id}/refunded': { post: settleOperation('markRefunded', 'Record that a due refund was paid', 'RefundedRequest') },
    '/api/v1/refunds/{id}/waived': { post: settleOperation('markWaived', 'Record that a due refund will not be paid', 'WaivedRequest') },
    '/api/v1/refunds/{id}/approve': {
      post: {
        operationId: 'approveRefund',
        summary: "Approve paying a refund above the chain's limit",
        tags: ['refunds'],
        security: bearer,
        description:
          "Needs the scope `refunds:approve`. A row held `above-limit` goes back to `due` with `approvedBy` (the token's id) and `approvedAt`, and the service pays it like any other; approving it again answers 200 and writes nothing.",
        parameters: [idParam, param('requestId')],
        requestBody: body('ApproveRequest'),
        responses: {
          200: answer('approved (or approved before); the row', ref('RefundRowAnswer')),
          400: execError('path or body invalid'),
          ...authAnswers('refunds:approve'),
          404: execError('no such row'),
          409: execError('the row is not held above-limit (REFUND_NOT_ABOVE_LIMIT)'),
          413: execError('body over bodyLimitBytes (64 KiB)'),
          ...busy('execution', perToken),
          500: execError('a fault of the service itself; no details'),
        },
      },
    },
  };
}

export const refundSchemas = { RefundRow: refundRowSchema, RefundRowAnswer: rowAnswer, RefundList: listAnswer };
