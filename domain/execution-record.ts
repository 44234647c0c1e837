// The execution record and its parts: what the workflow holds, the API answers and the read model
// keeps. The transitions that change it are in execution-state.ts.

/** The statuses of an execution. */
export type ExecutionStatus = 'PREPARED' | 'OPERATION_PENDING' | 'SIGNING' | 'EXPIRED' | 'CANCELLED';

/** Every status, in the order an execution can pass them (the list route's `status` filter checks against it). */
export const EXECUTION_STATUSES: readonly ExecutionStatus[] = ['PREPARED', 'OPERATION_PENDING', 'SIGNING', 'EXPIRED', 'CANCELLED'];

/**
 * Statuses after which the status never changes again. SIGNING is one: a cancel is refused from
 * it and nothing else moves it (a late deposit only lands in refusedDeposits).
 */
export const FINAL_STATUSES: readonly ExecutionStatus[] = ['SIGNING', 'EXPIRED', 'CANCELLED'];

/**
 * A completed deposit, as the `depositCompleted` signal and the deposit route carry it. The chain
 * watcher adds `blockNumber`, `transferIndex` (the transfer's place in its transaction: 0 for a
 * top-level native transfer, 1, 2, … for value moved by its internal calls in call order, the
 * log's position among the receipt's logs for a token) and `asset`; a deposit is identified by
 * `(txHash, transferIndex, asset)`, an absent index counting as 0 and an absent asset matching any.
 */
export interface Deposit {
  txHash: string;
  chain?: string;
  /** Base units of `asset`, a decimal string. */
  amount?: string;
  blockNumber?: number;
  transferIndex?: number;
  /** `native`, or `erc20:` + the token's lowercase address; unset in a report that does not say (the chain's proof sets it). */
  asset?: DepositAsset;
}

/** What a deposit is paid in: the chain's native coin, or an ERC-20 token (`erc20:` + its address). */
export type DepositAsset = 'native' | `erc20:${string}`;

/**
 * A stored deposit; `refundDue` is set when the execution was cancelled after the deposit arrived,
 * `reorged` when the chain watcher found its block reorganised away after it was signalled (no
 * status changes: an operator decides).
 */
export interface StoredDeposit extends Deposit {
  refundDue?: true;
  reorged?: true;
  /** How often the chain's word on it changed (reorganised away, mined again): the record's version counts each. */
  reorgs?: number;
}

/**
 * Where an on-chain deposit goes, fixed at prepare: a transfer of at least `minAmount` (wei, a
 * decimal string) of `asset` on `chain` to `address` completes the deposit.
 */
export interface DepositTarget {
  /** `evm:<chainId>`. */
  chain: string;
  /** `native`, or `erc20:` + the token's lowercase address (a token the deployment allows). */
  asset: DepositAsset;
  minAmount: string;
  /** EIP-55 address, unique to the execution. */
  address: string;
  /**
   * prepare's `deposit.refundAddress`, EIP-55: where the service pays back deposits to `address`
   * it does not take (absent: each transfer's payer).
   */
  refundAddress?: string;
}

/** The wallet-connection proof of a submit (spec 2.1); `timestamp` is Unix seconds. */
export interface ConnectEnvelope {
  address: string;
  domain: string;
  timestamp: number;
}

/** What a valid submit stores. */
export interface SignedPayload {
  /** The signature in its canonical spelling, `0x` + 128 lowercase hex digits. */
  signature: string;
  /** The signer key, `0x` + 64 lowercase hex digits. */
  publicKey: string;
  connectEnvelope: ConnectEnvelope;
  /** ISO-8601 time the submit was accepted. */
  submittedAt: string;
}

/** One status change. */
export interface HistoryEntry {
  status: ExecutionStatus;
  at: string;
}

/** A deposit the execution did not take, kept so that an operator can refund it. */
export interface RefusedDeposit extends Deposit {
  at: string;
  /**
   * `below-minimum`: less than the deposit target's minAmount; `wrong-chain`: another chain than
   * the target's; `wrong-asset`: another asset than the target's (a token to a native target, a
   * native transfer or another token to a token target).
   */
  reason: 'expired' | 'other-tx' | 'cancelled' | 'below-minimum' | 'wrong-chain' | 'wrong-asset';
  reorged?: true;
  /** As StoredDeposit.reorgs. */
  reorgs?: number;
}

/**
 * A claimed deposit the chain refuted: no such transaction, reverted, not to this address, no
 * value, not this deposit's token, or still not shown after the execution asked for about half an
 * hour (`unproven`). Kept on the record for whoever claimed it; never owed (no money arrived).
 */
export interface RefutedClaim {
  txHash: string;
  transferIndex?: number;
  asset?: DepositAsset;
  reason: string;
  at: string;
}

/** How many refuted claims a record keeps (later ones are only logged). */
export const MAX_REFUTED_IN_RECORD = 10;

/** The execution record; all times ISO-8601 strings, `history` oldest first. */
export interface ExecutionRecord {
  executionId: string;
  wallet: string;
  status: ExecutionStatus;
  intent: unknown;
  intentHash: string;
  signerPublicKey: string;
  signingMessage?: string;
  /** Set when prepare asked for an on-chain deposit. */
  depositTarget?: DepositTarget;
  deposit?: StoredDeposit;
  signedPayload?: SignedPayload;
  createdAt: string;
  updatedAt: string;
  expiresAt: string;
  /** Set when the deposit moved it to OPERATION_PENDING: without a signature by then it becomes EXPIRED and its deposit is owed back. */
  signingDeadline?: string;
  history: HistoryEntry[];
  refusedDeposits: RefusedDeposit[];
  /** Deposit claims the chain refuted (absent until the first). */
  refutedClaims?: RefutedClaim[];
}

/**
 * How many refused deposits a record keeps. Every refusal is owed back and lands in the refunds
 * ledger (outside the workflow); the record shows the first ones, so that no stream of transfers
 * or reports can grow it, its history or its read-model writes without bound.
 */
export const MAX_REFUSED_IN_RECORD = 10;
