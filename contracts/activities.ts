/**
 * The activities' signatures: what the workflows call (proxyActivities) and the worker's
 * activities implement (activities/index.ts). They meet here, so neither imports the other.
 */
import type { Deposit, DepositTarget, ExecutionRecord, RefusedDeposit } from '../domain/execution-state';
import type { DepositProof } from '../domain/deposit-proof';
import type { ChangeResult, WhitelistKind } from '../domain/whitelist-messages';
import type { BlockHeader, BlockRef, ChainTransfer, DepositSignal, ReorgReport, WatcherState } from '../domain/chain-watcher';
import type { ApplyRequest, ReplicaState } from './storage-node-protocol';
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
  /**
   * Anti-entropy for one page of one whitelist: every node's entries after `after` (histories,
   * tombstones included), each entry's histories merged and written to every replica that lacks
   * part of them (signed like every request). `next` is where the next page starts.
   */
  repairPage(input: RepairPageInput): Promise<RepairPageResult>;
  /** Tells each node that a pass which heard every node on every page filled its incarnation (decision 0094). */
  confirmRefilled(marks: Array<{ node: string; incarnation: number }>): Promise<void>;
}

export interface RepairPageInput {
  kind: WhitelistKind;
  after?: string;
  limit: number;
}

export interface RepairPageResult {
  next?: string;
  /** Entries compared. */
  entries: number;
  /** Replicas that took a repair (one entry on one node counts once). */
  repaired: number;
  /** Nodes that did not answer: their part waits for the next pass. */
  unreachable: string[];
  /** Each answering node's replica state on this page. */
  replicas: Record<string, ReplicaState>;
}

/** One round's read of the chain (docs/decisions/0071-chain-watcher.md). */
export interface ChainRound {
  /** The chain's head when the round read it. */
  head: number;
  /** Blocks `from`..min(head, from + maxBlocks − 1), ascending. */
  blocks: BlockHeader[];
  /** Native transfers in those blocks whose `to` is a known deposit address. */
  transfers: ChainTransfer[];
  /**
   * Blocks of `blocks` read without their call traces (the node did not answer them in the round's
   * trace budget): the watcher's backlog. Absent from an older build's answer: none.
   */
  untraced?: BlockRef[];
  /** Blocks of the backlog given whose traces answered this round (their transfers are in `transfers`). */
  traced?: BlockRef[];
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
  /** Dust (past its address's share of signalled ones, or a batch): its row is held as too small to pay back automatically. */
  tooSmall?: true;
  /** Not sent: another transfer of the round came first to the same execution, which takes one deposit (owed as `other-tx`). */
  laterInRound?: true;
}

export interface ChainActivities {
  /**
   * Where a new watcher run starts (domain/chain-watcher resumeState): from the last confirmed
   * block and the signals an earlier run recorded in the read model, so that a watcher that failed
   * or was terminated misses nothing mined meanwhile, with the signalled transfers a
   * reorganisation removed meanwhile to report; else at the chain's head (a chain never watched).
   */
  watcherStart(input: { chain: string }): Promise<{ state: WatcherState; reorged: ReorgReport[] }>;
  /**
   * Records `checkpoint` (the watcher's last confirmed block, every transfer at or below it
   * signalled or owed) in the read model, then reads the block headers from `from` on (at most the
   * worker's CHAIN_MAX_BLOCKS_PER_ROUND, fewer when their transfers pass a round's bound) and the
   * deposits in them. With `waitAfter`, first waits (up to CHAIN_POLL_INTERVAL_MS, at most 5 s) for
   * the head to pass that block: the caught-up watcher's long poll.
   */
  readChainRound(input: {
    chain: string;
    from: number;
    waitAfter?: number;
    checkpoint?: BlockRef;
    untraced?: BlockRef[];
    /** The most transfers the watcher's state has room for (domain/chain-watcher roundRoom); absent: a round's own bound. */
    room?: number;
  }): Promise<ChainRound>;
  /** The canonical hash of each block number (numbers past the head are left out). */
  canonicalHashes(input: { chain: string; numbers: number[] }): Promise<Array<{ number: number; hash: string }>>;
  /**
   * Deposits whose block was reorganised away after they were signalled: their refunds ledger rows
   * leave `due` (void), a closed execution whose own deposit it was is flagged in the read model,
   * and each is logged and counted.
   */
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
   * What the chain says of a deposit that a `depositCompleted` or `depositReorged` signal claims to
   * an execution with an on-chain target (domain/deposit-proof.ts): proven, or why not and whether
   * the same claim may be proven later. Throws, to be retried, only while the node cannot answer.
   */
  checkDeposit(input: { target: DepositTarget; deposit: Deposit }): Promise<DepositProof>;
  /**
   * After a round's signals: puts in the refunds ledger the deposits the execution could not take
   * (`undelivered`), brings back to `due` the void rows of every transfer of the round (mined
   * again and confirmed), and logs and counts.
   */
  reportSignals(input: { chain: string; delivered: number; undelivered: UndeliveredDeposit[]; sent?: DepositSignal[] }): Promise<void>;
}

/** One deposit address's refunds, as its `refund:<chain>:<address>` workflow names it. */
export interface RefundAddress {
  chain: string;
  /** Lowercase. */
  address: string;
}

/** A row of that address, by id. */
export interface RefundStep extends RefundAddress {
  id: string;
}

/**
 * The service's refunder (docs/decisions/0081): each activity reads the row from the ledger again
 * and writes with a conditional update, so that a retried activity, a second worker or a
 * terminated workflow never pays a row twice. Signing and broadcasting are separate.
 */
export interface RefundActivities {
  /**
   * The sweep: holds the rows no refunder can pay (`off-chain`), and answers the chain of this
   * worker's node with the deposit addresses that have a row to work on. While REFUND_PAYMENTS is
   * off it holds nothing and answers only the addresses with a transaction out (its nonce must be
   * watched). `room`: how many new refund workflows the sweep may start, REFUND_OPEN_RUNS less
   * those running on its task queue (decision 0089).
   */
  refundAddressesToPay(): Promise<{ chain?: string; addresses: string[]; pollIntervalMs: number; room: number }>;
  /** The address's next row: `watch` when it has a transaction out, `sign` when due; undefined when none is left. */
  nextRefund(input: RefundAddress): Promise<{ id: string; step: 'sign' | 'watch' } | undefined>;
  /**
   * Decides and signs a due row's refund: held for a person (why in the ledger), `wait` (its
   * transfer is not deep enough yet, or REFUND_PAYMENTS is off), or `paying` (nonce and the
   * signed transaction recorded, nothing broadcast yet); `gone` when the row changed meanwhile.
   */
  signRefund(input: RefundStep): Promise<'paying' | 'held' | 'wait' | 'gone'>;
  /**
   * Sends every signed variant of the row's nonce to the node again (the node may have forgotten
   * them, or a reorganisation removed them). A token refund's newest variant is sent only once the
   * gas account's mined top-ups cover its most cost: until then this step works the gas account's
   * one top-up in flight (or signs the next one) and sends nothing of the row.
   */
  broadcastRefund(input: RefundStep): Promise<void>;
  /**
   * Reads the receipts of every variant: `mined` (recorded: refunded, held as reverted or, for a
   * token refund without its `Transfer` log, `no-transfer-log`, or a cancel),
   * `replace` (not mined REFUND_REPLACE_AFTER_BLOCKS after it was sent), `cancel` (the row was voided
   * while paying), else `pending`.
   */
  checkRefund(input: RefundStep): Promise<'mined' | 'pending' | 'replace' | 'cancel'>;
  /**
   * Signs a replacement at the same nonce with raised fees (a refund; a zero-value cancel to the
   * address itself for a row voided while paying) and records it before any broadcast; `capped`
   * when its fees would pass the row's cap (held `fee-cap`, still watched).
   */
  replaceRefund(input: RefundStep): Promise<'signed' | 'capped' | 'gone'>;
}

export type Activities = ExecutionActivities & WhitelistActivities & ChainActivities & RefundActivities;
