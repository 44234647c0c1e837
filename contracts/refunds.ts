import type { PayerKind } from '../domain/payer-kind';
import type { HoldReason, RefundState } from '../domain/refund-states';

export { HOLD_REASONS, REFUND_STATES, type HoldReason, type RefundState } from '../domain/refund-states';

/**
 * The refunds ledger's rows as every part sees them: the read model writes and reads them
 * (db/refund-ledger.ts), the API answers them, the refund.due webhook carries them.
 */

/** A deposit the service did not take, as whoever saw the refusal reports it. */
export interface RefundDue {
  workflowId: string;
  wallet: string;
  executionId: string;
  chain?: string;
  txHash: string;
  transferIndex?: number;
  amount?: string;
  asset?: string;
  /**
   * Who paid the transfer (`0x` + 40 lowercase hex digits), where the one reporting it read it from
   * the chain: the token `Transfer` log's `from`, an internal call's frame `from`, or the
   * transaction's sender for its own value (transferIndex 0). Where a refund goes back to.
   */
  sender?: string;
  /** Whether `sender` has code (`contract`; an EIP-7702 delegation is an `eoa`): a refund to a contract may wait for a person. */
  payerKind?: PayerKind;
  /** A refusal reason of the execution record (`expired`, `cancelled`, `other-tx`, …), or `closed`. */
  reason: string;
  /** Who saw the refusal: the API (a report to a closed execution), the chain watcher, or the execution (its read-model write). */
  reportedBy: 'api' | 'chain-watcher' | 'execution';
  /**
   * How many transfers the row stands for: absent or 1 for one transfer; more for a dust batch,
   * every transfer below the address's minAmount (or of another asset) that one block brought it,
   * summed once: `txHash` is then the block's hash and `transferIndex` 0.
   */
  transfers?: number;
  /** Recorded `held` from the start, with this reason (a dust batch: `too-small`). */
  holdReason?: HoldReason;
  /**
   * Recorded `void` from the start, for this reason: the execution's record holds its transfer
   * flagged reorganised away (nothing is owed; the watcher puts it back `due` if the transfer is
   * mined again).
   */
  voidReason?: VoidReason;
}

/** One signed transaction for a row's nonce, kept whether or not it is ever mined. */
export interface RefundVariant {
  /** `refund` pays the destination; `cancel` is the zero-value self-transfer that takes the nonce back from a row voided while paying. */
  kind: 'refund' | 'cancel';
  hash: string;
  /** The signed transaction (`0x` hex), broadcast again unchanged when the node forgets it or a reorganisation removes it. */
  raw: string;
  /** The transaction's `to`: the destination of a native refund, the token contract of a token refund. */
  to: string;
  /** A token refund's call data: `transfer(destination, amount)`. */
  data?: string;
  /** Wei, decimal strings. */
  value: string;
  gas: string;
  /** EIP-1559 fees, or `gasPrice` alone on a chain without a base fee. */
  maxFeePerGas?: string;
  maxPriorityFeePerGas?: string;
  gasPrice?: string;
  signedAt: string;
  /** The head when it was first broadcast: a variant not mined REFUND_REPLACE_AFTER_BLOCKS later is replaced. */
  sentAtBlock?: number;
}

/** Why a row left `due` without a refund: `reorged`, the chain no longer holds its transfer. */
export type VoidReason = 'reorged';

/**
 * The reasons a ledger row has beside the record's refusal reasons: `closed` (a deposit to an
 * execution whose workflow had closed, or a run terminated while PREPARED),
 * `cancelled-after-deposit` (the execution's own deposit, after a cancel) and `unsigned-by-deadline`
 * (the execution's own deposit, when no signature came before its signing deadline).
 */
export const LEDGER_ONLY_REASONS = ['closed', 'cancelled-after-deposit', 'unsigned-by-deadline'] as const;

/** What an operator records once a refund is settled. */
/** What the refunds ledger asks of a row it is about to write: held from the start, and why (dust: `too-small`), or undefined. */
export type RefundJudge = (due: RefundDue) => Promise<HoldReason | undefined>;

export type Settlement = { state: 'refunded'; txHash: string } | { state: 'waived'; reason: string };

export interface RefundRow extends Required<
  Omit<RefundDue, 'chain' | 'amount' | 'asset' | 'sender' | 'payerKind' | 'holdReason' | 'voidReason'>
> {
  id: string;
  chain?: string;
  amount?: string;
  asset?: string;
  sender?: string;
  payerKind?: PayerKind;
  state: RefundState;
  createdAt: string;
  /** Set once settled: when, by which token, and the refund's txHash or the reason it was waived. */
  settledAt?: string;
  settledBy?: string;
  refundTxHash?: string;
  waivedReason?: string;
  holdReason?: HoldReason;
  /** Set while `void`. */
  voidedAt?: string;
  voidReason?: VoidReason;
  /** Set by the service's refunder once it signed a refund: the address's nonce it uses, where the money goes, every signed variant. */
  refundNonce?: number;
  refundTo?: string;
  refundVariants?: RefundVariant[];
  /** Set once the nonce is mined: its block, and the value the mined variant paid (a replacement pays less than the first). */
  refundBlock?: number;
  refundValue?: string;
  /** Wei the service's transactions that paid nobody (a cancel, a refund mined with status 0) cost, out of the amount: a later refund pays that much less. */
  feesSpent?: string;
  /** A token refund's, once mined: wei its gas top-ups left on the deposit address (topped up less the fee it cost). */
  gasLeft?: string;
  /** Set once a person approved paying it above the chain's limit: the token id, and when. */
  approvedBy?: string;
  approvedAt?: string;
}

/** The ledger query that lists one execution's rows (an execution record's `refunds.url`). */
export function refundsUrl(wallet: string, executionId: string): string {
  return `/api/v1/refunds?${new URLSearchParams({ wallet, executionId }).toString()}`;
}
