/**
 * The deposit lookup's contract, written once: its path parameters (ajv, strict), its answer and
 * its OpenAPI operation (api/operations/openapi.ts assembles the document from them).
 */
import { EXECUTION_STATUSES } from '../../domain/execution-state';
import { TX_HASH_PATTERN } from '../../domain/deposit-proof';
import { HOLD_REASONS, REFUND_STATES } from '../../contracts/refunds';
import { answer, busy, execError, param, perClient, ref, retryAfter, type Json } from '../http/openapi-parts';

/** `evm:<chainId>`, as prepare's deposit.chain. */
export const depositChainParamSchema = { type: 'string', pattern: '^evm:[1-9][0-9]{0,18}$' } as const;

/** An EVM transaction hash in any case; looked up lowercase. */
export const depositTxHashParamSchema = { type: 'string', pattern: TX_HASH_PATTERN } as const;

const text = { type: 'string' } as const;

export const depositEntrySchema = {
  type: 'object',
  additionalProperties: false,
  required: ['chain', 'txHash', 'transferIndex', 'wallet', 'executionId', 'outcome'],
  properties: {
    chain: { type: 'string', description: '`evm:<chainId>`' },
    txHash: { type: 'string', description: 'the transaction, lowercase' },
    transferIndex: {
      type: 'integer',
      minimum: 0,
      description:
        "the transfer's place in its transaction: 0 for a top-level native transfer, 1, 2, … for value its internal calls moved, a token transfer's place among the receipt's logs",
    },
    asset: { type: 'string', description: '`native` or `erc20:<token address>`, when known' },
    amount: { type: 'string', description: 'base units of asset, a decimal string, when known' },
    wallet: text,
    executionId: text,
    status: {
      type: 'string',
      enum: [...EXECUTION_STATUSES],
      description: "the execution's status in the read model; absent while the read model holds no record of it",
    },
    outcome: {
      type: 'string',
      enum: ['taken', 'owed'],
      description:
        "`taken`: the execution's deposit; `owed`: the service did not take it (or took it and owes it back after a cancel or a missed signing deadline), and a refunds ledger row says what became of it (`refund`)",
    },
    refund: {
      type: 'object',
      additionalProperties: false,
      required: ['id', 'state', 'reason'],
      description: "set when owed: the refunds ledger row's id, state and refund",
      properties: {
        id: { type: 'string', pattern: '^[0-9a-f]{32}$' },
        state: { type: 'string', enum: [...REFUND_STATES] },
        reason: {
          type: 'string',
          description:
            'why it is owed: expired, cancelled, other-tx, below-minimum, wrong-chain, wrong-asset, closed, cancelled-after-deposit, unsigned-by-deadline',
        },
        holdReason: { type: 'string', enum: [...HOLD_REASONS], description: 'set while held: why a person pays it back' },
        refundTxHash: { type: 'string', description: 'set once refunded: the refund transaction' },
        refundTo: { type: 'string', pattern: '^0x[0-9a-f]{40}$', description: "where the service's refund goes (lowercase)" },
        refundValue: {
          type: 'string',
          description: "base units the mined refund paid: a native refund's amount less its fee (wei), a token refund's whole amount",
        },
      },
    },
  },
} as const;

const lookupAnswer = {
  type: 'object',
  additionalProperties: false,
  required: ['result'],
  properties: { result: { type: 'array', minItems: 1, items: ref('DepositEntry') } },
};

export function depositPaths(): Json {
  return {
    '/api/v1/deposits/{chain}/{txHash}': {
      get: {
        operationId: 'lookupDeposit',
        summary: 'What became of the transfers of one transaction: taken by an execution, or owed back',
        tags: ['deposits'],
        security: [],
        description:
          "For a depositor who knows only their transaction. One entry per transfer of it the service knows of (a transaction may pay several: another transferIndex or asset, possibly another execution): the execution's deposit (`taken`), or a refunds ledger row (`owed`, with the refund's state). Read from the read model (a 503 while it is down), which the workflows update after every change (usually within a second).",
        parameters: [
          { name: 'chain', in: 'path', required: true, description: '`evm:<chainId>`', schema: depositChainParamSchema },
          {
            name: 'txHash',
            in: 'path',
            required: true,
            description: 'the transaction: `0x` + 64 hex digits, any case',
            schema: depositTxHashParamSchema,
          },
          param('requestId'),
        ],
        responses: {
          200: answer('the transfers of the transaction the service knows of', ref('DepositLookup')),
          400: execError('path invalid: a chain that is not `evm:<chainId>`, a txHash that is not `0x` + 64 hex digits'),
          404: execError(
            'the service knows of no transfer of this transaction on this chain; `code` says what the chain watcher knows: `DEPOSIT_NOT_REACHED` (mined in a block the watcher has not read, or not yet counted past its confirmations: ask again), `NOT_A_DEPOSIT` (in a block it has counted past its confirmations: it paid no deposit address of this service), `NOT_FOUND` (the chain shows no such transaction, or the watcher cannot be asked)',
          ),
          ...busy('execution', perClient),
          503: answer('the read model is down; the same request may be sent again after Retry-After seconds', ref('Error'), retryAfter),
          500: execError('a fault of the service itself; no details'),
        },
      },
    },
  };
}

export const depositSchemas = { DepositEntry: depositEntrySchema, DepositLookup: lookupAnswer };
