/**
 * The Temporal names of this service, shared by the workflows, the API and the tests. Operators use
 * them from the `temporal` CLI, so they are part of the interface: renaming one is a breaking change.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { Deposit, DepositAsset, ExecutionRecord, ExecutionStatus, PreparedExecution, SignedPayload } from '../domain/execution-state';
import type { BatchOutcomeMemo, BatchOutcome } from '../domain/batch-outcome-memo';

export type { BatchOutcome };
import type { BatchChange, NodeStatus } from '../domain/batch-status';
import type { WhitelistChange } from '../domain/whitelist-messages';
import type { ChainTransfer, WatcherState } from '../domain/chain-watcher';
import type { WebhookDelivery } from './webhooks';

export const EXECUTION_WORKFLOW_TYPE = 'executionWorkflow';

/**
 * The task queues of the workflows anyone outside can cause in numbers, beside the service's task
 * queue `taskQueue`; their runs take no place among CAPACITY_OPEN_RUNS (docs/decisions/0089).
 * Refunds: the sweep and one workflow per deposit address, as many as REFUND_OPEN_RUNS at once.
 */
export const refundsTaskQueue = (taskQueue: string) => `${taskQueue}-refunds`;
/** Webhook deliveries (an execution's handed-over webhooks, the refunds ledger's announcer and its deliveries), on a worker without a cache. */
export const webhooksTaskQueue = (taskQueue: string) => `${taskQueue}-webhooks`;
/** Every task queue a worker of the service polls. */
export const serviceTaskQueues = (taskQueue: string) => [taskQueue, refundsTaskQueue(taskQueue), webhooksTaskQueue(taskQueue)];
export const CHAIN_WATCHER_WORKFLOW_TYPE = 'chainWatcherWorkflow';
export const EXECUTION_WEBHOOKS_WORKFLOW_TYPE = 'executionWebhooksWorkflow';
export const WHITELIST_BATCH_WORKFLOW_TYPE = 'whitelistBatchWorkflow';

/** Workflow id of an execution: one per (wallet, executionId), so another wallet's id never matches. */
export const executionWorkflowId = (wallet: string, executionId: string) => `exec:${wallet}:${executionId}`;
/**
 * The wallet and execution id of an execution's workflow id (executionWorkflowId read back), or
 * undefined for any other workflow's id. A wallet never holds a colon (contracts/ids.ts WALLET_PATTERN), so the
 * first colon after `exec:` ends it and the execution id is everything after.
 */
export function parseExecutionWorkflowId(workflowId: string): { wallet: string; executionId: string } | undefined {
  const match = /^exec:([^:]*):(.*)$/s.exec(workflowId);
  return match ? { wallet: match[1], executionId: match[2] } : undefined;
}
export const whitelistBatchWorkflowId = (batchId: string) => `whitelist-batch:${batchId}`;
/** Workflow id of the webhooks a finished execution handed over (its receiver was slow or down). */
export const executionWebhooksWorkflowId = (executionWorkflowId: string) => `webhooks:${executionWorkflowId}`;
/** The workflow that delivers one refunds ledger row's refund.due webhook. */
export const REFUND_WEBHOOK_WORKFLOW_TYPE = 'refundWebhookWorkflow';
/**
 * The delivery workflow (and webhook-id) of a refunds ledger row's state change number `event`
 * (1: due, 2: voided, 3: due again, …); the first keeps the id it always had.
 */
export const refundWebhookWorkflowId = (refundId: string, event = 1) =>
  event === 1 ? `refund-due:${refundId}` : `refund-${event % 2 === 0 ? 'voided' : 'due'}:${refundId}:${event}`;
/** The delivery workflow (and webhook-id) of a refunds ledger row's refund.paid: a row is paid once. */
export const refundPaidWebhookWorkflowId = (refundId: string) => `refund-paid:${refundId}`;
/** The delivery workflow (and webhook-id) of a refunds ledger row's refund.held for one hold reason: once per row and reason. */
export const refundHeldWebhookWorkflowId = (refundId: string, reason: string) => `refund-held:${refundId}:${reason}`;
/** The scheduled sweep that hands unannounced ledger rows to refundWebhookWorkflow, one schedule per task queue. */
export const REFUND_ANNOUNCER_WORKFLOW_TYPE = 'refundAnnouncerWorkflow';
export const refundAnnouncerScheduleId = (taskQueue: string) => `refund-announcer:${taskQueue}`;
/** The refunds the service pays (decision 0081): a sweep on a schedule, and one workflow per deposit address. */
export const WHITELIST_REPAIR_WORKFLOW_TYPE = 'whitelistRepairWorkflow';
/** The anti-entropy pass every minute (schedule and workflow id); `npm run repair` starts one under another id. */
export const whitelistRepairScheduleId = (taskQueue: string) => `whitelist-repair:${taskQueue}`;
/** A pass started on demand (`npm run repair`). */
export const whitelistRepairWorkflowId = (taskQueue: string, runId: string) => `whitelist-repair:${taskQueue}:${runId}`;
export const REFUND_SWEEP_WORKFLOW_TYPE = 'refundSweepWorkflow';
export const refundSweepScheduleId = (taskQueue: string) => `refund-sweep:${taskQueue}`;
export const REFUND_ADDRESS_WORKFLOW_TYPE = 'refundAddressWorkflow';
/** Workflow id of the refunds of one deposit address: one id per address serialises its nonces. */
export const refundAddressWorkflowId = (chain: string, address: string) => `refund:${chain}:${address.toLowerCase()}`;
/** Workflow id of a chain's watcher (`evm:<chainId>`): one id per chain, so any number of workers start one watcher. */
export const chainWatcherWorkflowId = (chain: string) => `chain-watcher:${chain}`;

export const executionWalletKey = defineSearchAttributeKey('ExecutionWallet', SearchAttributeType.KEYWORD);
// The execution's status could not be published as ExecutionStatus: Temporal reserves that name for its own
// Running/Completed/... status (the server answers "ExecutionStatus attribute can't be set"), so the
// execution's status is published as ExecutionState.
export const executionStatusKey = defineSearchAttributeKey('ExecutionState', SearchAttributeType.KEYWORD);

// ---- executions ----

export interface ExecutionWorkflowInput extends PreparedExecution {
  /**
   * How long the workflow stays open after SIGNING, EXPIRED or CANCELLED (EXECUTION_LINGER_S, 0 by
   * default: it closes once its read model and webhooks are out; the API answers retries and late
   * deposits of a closed execution from the read model and the refunds ledger).
   */
  lingerSeconds: number;
  /**
   * How long OPERATION_PENDING waits for the signature (SIGNING_DEADLINE_S) before it is EXPIRED
   * and its deposit owed back. Absent in executions started by older versions (they wait for ever).
   */
  signingDeadlineSeconds?: number;
  /**
   * Whether webhook endpoints are configured: each status change is then delivered by the
   * deliverWebhook activity. Absent in executions started by older versions (none are sent).
   */
  webhooks?: boolean;
}

/** The webhooks of one finished execution still to be delivered, oldest first. */
export interface ExecutionWebhooksInput {
  executionWorkflowId: string;
  deliveries: WebhookDelivery[];
}

/** Chain watchers: `temporal workflow signal --name depositCompleted --input '{"txHash":"0x.."}'`. */
export const depositCompletedSignal = defineSignal<[Deposit]>('depositCompleted');
/**
 * The chain watcher: the block of a deposit it signalled is no longer canonical (a reorg deeper
 * than the confirmations). The execution marks that deposit `reorged: true`; its status stays.
 */
export const depositReorgedSignal = defineSignal<[DepositReorged]>('depositReorged');
export interface DepositReorged {
  txHash: string;
  transferIndex: number;
  chain: string;
  blockNumber: number;
  blockHash: string;
  /** The transfer's asset (unset from a watcher of an older build: native). */
  asset?: DepositAsset;
}
/** `temporal workflow query --type getExecution`: the execution record. */
export const getExecutionQuery = defineQuery<ExecutionRecord>('getExecution');

export interface SubmitSignatureArgs {
  payload: SignedPayload;
  signingMessage: string;
}
export interface SubmitSignatureResult {
  status: ExecutionStatus;
  /** The record after the submit, for the caller to write into the read model (callerWritesRecord); absent from runs of older builds. */
  record?: ExecutionRecord;
}
/** The API sends a verified signature; the validator rejects EXPIRED and a different signature. */
export const submitSignatureUpdate = defineUpdate<SubmitSignatureResult, [SubmitSignatureArgs]>('submitSignature');
/** The HTTP deposit route: like the signal, but answers whether the deposit was accepted. */
export const recordDepositUpdate = defineUpdate<ExecutionRecord, [Deposit]>('recordDeposit');

/** Who asked for a cancel: the API says `wallet` after checking the wallet's signature; an operator may say anything. */
export interface CancelExecutionArgs {
  requestedBy?: string;
}
/**
 * Cancels (PREPARED or OPERATION_PENDING → CANCELLED; a stored deposit becomes `refundDue`) and
 * answers the record. The cancel route sends it after verifying the wallet's signature; operators:
 * `temporal workflow update execute --workflow-id exec:{wallet}:{executionId} --name cancelExecution --input '{"requestedBy":"operator"}'`.
 * Rejected by its validator (no history event) when already CANCELLED (ExecutionFailure.duplicate,
 * detail: the record) and from SIGNING or EXPIRED (ExecutionFailure.cancelRefused).
 */
export const cancelExecutionUpdate = defineUpdate<ExecutionRecord, [CancelExecutionArgs]>('cancelExecution');

/** ApplicationFailure types thrown by the execution workflow; the API maps them to HTTP answers. */
export const ExecutionFailure = {
  expired: 'ExecutionExpired',
  /** A submit to a CANCELLED execution. */
  cancelled: 'ExecutionCancelled',
  /** A cancel of a SIGNING or EXPIRED execution; the failure's first detail is the status. */
  cancelRefused: 'CancelRefused',
  signatureConflict: 'SignatureConflict',
  depositRefused: 'DepositRefused',
  /**
   * The Update would change nothing (the same signature or txHash again): its validator rejects it,
   * so a retry or a replay writes no history event and uses none of the workflow's Update budget.
   * The failure's first detail is the answer: a SubmitSignatureResult for submitSignature, the
   * ExecutionRecord for recordDeposit. The API answers it as a success.
   */
  duplicate: 'DuplicateUpdate',
} as const;

// ---- chain watchers ----

/** What a chain watcher starts from; continue-as-new carries `state` (docs/decisions/0071-chain-watcher.md). */
export interface ChainWatcherInput {
  /** `evm:<chainId>`. */
  chain: string;
  /** Absent on the first run: the watcher starts at the chain's head. */
  state?: WatcherState;
  /** Deposits signalled so far, over every run (for the operator's query). */
  signalledTotal?: number;
}

/** `temporal workflow query --workflow-id chain-watcher:evm:<id> --type chainWatcherState`: the cursor, the window's ends and the pending transfers. */
export const chainWatcherStateQuery = defineQuery<ChainWatcherView>('chainWatcherState');
export interface ChainWatcherView {
  chain: string;
  cursor: number;
  windowFrom?: number;
  pending: ChainTransfer[];
  signalledInWindow: number;
  signalledTotal: number;
}

// ---- refunds ----

export interface RefundAddressInput {
  chain: string;
  /** Lowercase. */
  address: string;
  /** How long it waits between looks at a transaction out (CHAIN_POLL_INTERVAL_MS of the sweeping worker). */
  pollIntervalMs: number;
  /** Rows whose nonce was mined, over every run (continue-as-new carries it). */
  paid?: number;
}

// ---- whitelist batches ----

export interface WhitelistBatchInput {
  batchId: string;
  /** Id of the token that authorised the batch (never the token itself); the workflow re-checks it. */
  tokenId: string;
  /** Entries already in EIP-55 form. */
  changes: WhitelistChange[];
  /** Storage node base URLs; each entry's replicas are chosen by rendezvous hashing over this list. */
  nodes: string[];
  /** Copies of each entry (STORAGE_REPLICAS, capped by the node count). */
  replicas: number;
  /**
   * The replicas of each change, in request order, each an array of indexes into `nodes` (highest
   * rendezvous weight first), computed by the API with the same hashing: SHA-256 in the workflow
   * sandbox costs about as much as the rest of a batch. The workflow hashes itself only when these
   * do not fit `nodes`.
   */
  replicaIndexes: number[][];
  deadlineMs: number;
}

export type { BatchChange, NodeStatus } from '../domain/batch-status';

/**
 * What a batch workflow returns (decision 0017): its outcome in the compact form and each node's
 * progress. Each change's view is the `batchStatus` query's, which is what `GET
 * /chain/whitelists/batches/{batchId}` reads.
 */
export interface WhitelistBatchResult {
  batchId: string;
  tokenId: string;
  outcome?: BatchOutcomeMemo;
  nodes: Record<string, NodeStatus>;
}

export interface BatchWorkflowStatus {
  batchId: string;
  /** Undefined until the HTTP outcome is known. */
  outcome?: BatchOutcome;
  nodes: Record<string, NodeStatus>;
  /** The token that authorised the batch. */
  tokenId: string;
  /** Each change with its node and, once it answered, the node's verdict. */
  changes: BatchChange[];
}

/**
 * Waits until the batch's HTTP answer is known (all nodes answered, one failed, or the deadline)
 * and answers it in the compact form; the API rebuilds the confirmations from the changes it sent.
 */
export const batchOutcomeUpdate = defineUpdate<BatchOutcomeMemo>('batchOutcome');
export const batchStatusQuery = defineQuery<BatchWorkflowStatus>('batchStatus');

/** What one anti-entropy pass did over both whitelists. */
export interface WhitelistRepairResult {
  /** Entries compared (each once per pass). */
  entries: number;
  /** Replicas written (one entry on one node counts once). */
  repaired: number;
  /** Nodes that did not answer at some page: what they lack waits for the next pass. */
  unreachable: string[];
}

/** ApplicationFailure types thrown by the whitelist activities. */
export const NodeFailure = {
  /** Connection refused: the request never reached the node, so nothing was applied. */
  unreachable: 'NodeUnreachable',
  /** The node answered non-2xx: it applied nothing. */
  rejected: 'NodeRejected',
  /** 2xx with a body we cannot read: the node may have applied the batch. */
  badResponse: 'NodeBadResponse',
  /** No answer in time (or the connection broke mid-way): the node may have applied the batch. */
  timeout: 'NodeTimeout',
  forbidden: 'Forbidden',
} as const;

/** True when a failure of this type may hide an apply that reached the node (see NodeFailure). */
export function mayHaveApplied(type: string): boolean {
  return type !== NodeFailure.unreachable && type !== NodeFailure.rejected;
}

/** True when another quick attempt may help: the node was not reached, or did not answer in time. */
export function isRetryableNodeFailure(type: string): boolean {
  return type === NodeFailure.unreachable || type === NodeFailure.timeout;
}

/** A node's share of a batch, tried a few times until the batch's deadline. */
export interface FirstRoundNodeInput {
  node: string;
  batchId: string;
  /** Each change's index in the batch, ascending (the order's last key, alike on every replica). */
  indexes: number[];
  /** The batch's position in the order of accepted batches (its workflow's start, epoch ms). */
  position: number;
  /** The token id, for the node's audit trail. */
  tokenId: string;
  changes: WhitelistChange[];
  /** Epoch ms: no attempt is started or waited for past this. */
  deadlineAt: number;
  attempts: number;
  /** Backoff before attempt n + 1 is backoffMs * 2^(n - 1). */
  backoffMs: number;
}

/** The precheck and the first round in one local activity: the token is checked first, and no node is asked unless it passes. */
export interface FirstRoundInput {
  batchId: string;
  position: number;
  tokenId: string;
  /** Every change of the batch, in request order (the precheck checks them all). */
  changes: WhitelistChange[];
  /** Each node with a share, with the indexes (into `changes`) of its share, in the order it applies them. */
  perNode: Array<{ node: string; indexes: number[] }>;
  /**
   * How many of each change's replicas must apply it (a majority). The round stops asking once
   * every change has that many and answers the nodes it still waited for as late: the workflow
   * completes them after the answer. Absent: every node is waited for.
   */
  quorum?: number[];
  deadlineAt: number;
  attempts: number;
  backoffMs: number;
}

export type FirstRoundResult =
  | { status: 'forbidden'; message: string }
  /** Per node, as `applyFirstRound` answers. */
  | { status: 'ran'; nodes: Record<string, FirstRoundNodeResult> };

export type FirstRoundNodeResult =
  /**
   * Each change's verdict flags, in the order of the node's share (decision 0017): the node's
   * answer matched every change (parseApplyAnswer), so the flags are all it adds.
   */
  | { status: 'applied'; changed: boolean[]; superseded: boolean[] }
  /** The node failed for good (refused, non-2xx, unreadable, out of attempts): the batch fails. */
  | { status: 'failed'; type: string; message: string; maybeApplied: boolean }
  /** The deadline came first: the node is retried after the answer. */
  | { status: 'late'; message: string; maybeApplied: boolean };
