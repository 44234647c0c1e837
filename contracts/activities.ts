/**
 * The activities' signatures: what the workflows call (proxyActivities) and the worker's
 * activities implement (activities/index.ts). They meet here, so neither imports the other.
 */
import type { Deposit, DepositTarget, ExecutionRecord, RefusedDeposit } from '../domain/execution-state';
import type { DepositProof } from '../domain/deposit-proof';
import type { ChangeResult } from '../domain/whitelist-messages';
import type { BlockHeader, BlockRef, ChainTransfer, DepositSignal, ReorgReport } from '../domain/chain-watcher';
import type { ApplyRequest } from './storage-node-protocol';
import type { FirstRoundInput, FirstRoundResult } from './temporal';
import type { WebhookDelivery } from './webhooks';

/** One node's share of a batch: the wire request and the node it goes to. */
export interface NodeApplyRequest extends ApplyRequest {
  node: string;
}

export interface ExecutionActivities {
  /**
   * Writes an execution's record to the read model (a row of the same or a newer version is kept),
   * after the refunds ledger rows of what it refused: the record's refusedDeposits, a deposit it
   * holds with refundDue, and `overflow`, refusals past what the record keeps.
   */
  projectExecution(input: { workflowId: string; record: ExecutionRecord; overflow?: RefusedDeposit[] }): Promise<void>;
  /** Delivers one event (a status change, a refund due) to every configured endpoint. */
  deliverWebhook(delivery: WebhookDelivery): Promise<{ delivered: number }>;
  /**
   * Hands the refunds ledger's unannounced rows (at most 100) to their refund.due delivery
   * workflows, then marks them announced: an outbox, so a row written while no sweep ran is
   * announced by the next. Nothing when no webhook endpoint is configured.
   */
  announceRefunds(): Promise<{ announced: number }>;
}

export interface WhitelistActivities {
  /** Re-checks the batch's token, then the first round at every owning node in parallel. */
  precheckAndFirstRound(input: FirstRoundInput): Promise<FirstRoundResult>;
  /** Applies one node's share of a batch, or its revert. */
  applyToNode(request: NodeApplyRequest): Promise<ChangeResult[]>;
}

/** One round's read of the chain (docs/decisions/0071-chain-watcher.md). */
export interface ChainRound {
  /** The chain's head when the round read it. */
  head: number;
  /** Blocks `from`..min(head, from + maxBlocks − 1), ascending. */
  blocks: BlockHeader[];
  /** Native transfers in those blocks whose `to` is a known deposit address. */
  transfers: ChainTransfer[];
  /** The worker's settings, read each round so that a change applies without restarting the watcher. */
  confirmations: number;
  pollIntervalMs: number;
  windowSize: number;
  roundsPerRun: number;
}

/** A deposit signal that could not be delivered (the execution is closed or gone). */
export interface UndeliveredDeposit {
  signal: DepositSignal;
  reason: string;
}

export interface ChainActivities {
  /** The chain's head block (number, hash): where a new watcher starts. */
  chainHead(input: { chain: string }): Promise<BlockRef>;
  /**
   * Reads the block headers from `from` on (at most the worker's CHAIN_MAX_BLOCKS_PER_ROUND) and the
   * deposits in them. With `waitAfter`, first waits (up to CHAIN_POLL_INTERVAL_MS, at most 5 s) for
   * the head to pass that block: the caught-up watcher's long poll.
   */
  readChainRound(input: { chain: string; from: number; waitAfter?: number }): Promise<ChainRound>;
  /** The canonical hash of each block number (numbers past the head are left out). */
  canonicalHashes(input: { chain: string; numbers: number[] }): Promise<Array<{ number: number; hash: string }>>;
  /** Error log and metric for deposits whose block was reorganised away after they were signalled. */
  reportReorgs(input: { reports: ReorgReport[] }): Promise<void>;
  /**
   * Splits confirmed deposits before they are signalled: `send` are the ones whose execution may
   * take them (or the read model does not know); `owed` the ones its record in the read model can
   * never take (it holds another deposit, or has expired or been cancelled), which reportSignals
   * puts in the refunds ledger instead: a stream of transfers to one address does not grow its
   * execution's history.
   */
  sortDeposits(input: { signals: DepositSignal[] }): Promise<{ send: DepositSignal[]; owed: UndeliveredDeposit[] }>;
  /**
   * Whether the chain shows a deposit that a `depositCompleted` signal reports to an execution with
   * an on-chain target (domain/deposit-proof.ts). Throws, to be retried, while the same report may
   * still be believed (not yet deep enough, or a node that has not seen it).
   */
  proveDeposit(input: { target: DepositTarget; deposit: Deposit }): Promise<DepositProof>;
  /** Log and metric for deposit signals the execution could not take; counter of the ones it took. */
  reportSignals(input: { chain: string; delivered: number; undelivered: UndeliveredDeposit[] }): Promise<void>;
}

export type Activities = ExecutionActivities & WhitelistActivities & ChainActivities;
