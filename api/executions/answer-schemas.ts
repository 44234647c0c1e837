/**
 * What the execution routes answer: the record and its refunds, the list, the submit's status and
 * the error body, as the OpenAPI document's components (api/operations/openapi.ts).
 */
import { HOLD_REASONS, REFUND_STATES } from '../../contracts/refunds';
import { EXECUTION_STATUSES } from '../../domain/execution-state';
import { STATUS_REASON_CODES } from '../../domain/status-reason';
import { ref } from '../http/openapi-parts';
import { depositBodySchema } from './request-schemas';

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
    statusReason: {
      type: 'object',
      additionalProperties: false,
      required: ['code', 'message'],
      description:
        "set on the API's answers (prepare, GET one, the list, the lookup): why the execution stands where it stands and what happens next, as a stable code and the words the status page shows",
      properties: {
        code: {
          type: 'string',
          enum: [...STATUS_REASON_CODES],
          description:
            '`awaiting-deposit`, `deposit-confirming` (the chain watcher holds a transfer short of its confirmations: confirmations), `deposit-refused` (a transfer below the minimum, of another asset or chain: owed back; still waiting), `awaiting-signature` (until signingDeadline), `signed`, `expired-without-deposit`, `expired-unsigned`, `cancelled`',
        },
        message: { type: 'string', description: 'the same in words, for a person' },
        until: { ...isoTime, description: 'the deadline the message speaks of (expiresAt, signingDeadline)' },
        confirmations: {
          type: 'object',
          additionalProperties: false,
          required: ['txHash', 'blockNumber', 'seen', 'needed'],
          description: 'with deposit-confirming: the transfer, its block, how deep it is (counting its own block) and how deep it must be',
          properties: {
            txHash: { type: 'string' },
            blockNumber: { type: 'integer', minimum: 0 },
            seen: { type: 'integer', minimum: 1 },
            needed: { type: 'integer', minimum: 1 },
          },
        },
      },
    },
    ownerRefundAddress: {
      ...ref('OwnerRefundAddress'),
      description:
        'on GET of one execution: the refund address its owner set by a signed command (POST …/refund-address), and what it covers',
    },
    refundPolicy: {
      type: 'object',
      additionalProperties: false,
      required: ['automatic', 'description'],
      description: "set on prepare's answer when it names a deposit: what becomes of a transfer the execution does not take",
      properties: {
        automatic: { type: 'boolean', description: 'whether the service pays it back by itself (REFUND_PAYMENTS)' },
        minimum: {
          type: 'string',
          description: 'the least it pays back by itself, base units of the asset (REFUND_MINIMUMS); absent: none',
        },
        expectedSeconds: {
          type: 'integer',
          minimum: 0,
          description:
            "about how long after the transfer its refund is sent (CHAIN_REORG_WINDOW blocks, the sweep, the refund's own blocks); absent where the chain's block time is not known",
        },
        description: { type: 'string', description: 'the same in words' },
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

/** The refund address an owner set: the address, the deposit and the payer it covers, when. */
export const ownerRefundAddressSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['refundAddress', 'txHash', 'setAt'],
  properties: {
    refundAddress: { type: 'string', pattern: '^0x[0-9a-fA-F]{40}$', description: 'EIP-55' },
    txHash: { type: 'string', description: "the execution's own deposit's transaction: its refund goes there" },
    payer: { type: 'string', description: "that deposit's payer (lowercase): its other transfers to the execution are refunded there too" },
    setAt: { ...isoTime, description: "the command's time (its envelope's timestamp)" },
  },
} as const;

export const ownerRefundAnswerSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['result'],
  properties: { result: ref('OwnerRefundAddress') },
} as const;

/** The batch lookup's answer: per item the record, or its own error. */
export const lookupAnswerSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['result'],
  properties: {
    result: {
      type: 'array',
      minItems: 1,
      maxItems: 128,
      items: {
        oneOf: [
          { type: 'object', additionalProperties: false, required: ['record'], properties: { record: ref('ExecutionRecord') } },
          {
            type: 'object',
            additionalProperties: false,
            required: ['error', 'code'],
            properties: {
              error: { type: 'string' },
              code: {
                type: 'string',
                enum: ['NOT_FOUND', 'INVALID'],
                description: '`NOT_FOUND`: no such execution for that wallet; `INVALID`: not a wallet and an execution id',
              },
            },
          },
        ],
      },
    },
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
