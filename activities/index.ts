import { createHash } from 'node:crypto';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { WebhookEndpoint } from '../config/config';
import type { Activities, NodeApplyRequest } from '../contracts/activities';
import { refundDelivery, refundHeldDelivery, refundPaidDelivery, type WebhookDelivery } from '../contracts/webhooks';
import {
  REFUND_WEBHOOK_WORKFLOW_TYPE,
  refundHeldWebhookWorkflowId,
  refundPaidWebhookWorkflowId,
  refundWebhookWorkflowId,
} from '../contracts/temporal';
import { WorkflowExecutionAlreadyStartedError, WorkflowIdReusePolicy } from '@temporalio/client';
import type { ExecutionStore } from '../db/execution-store';
import { refundId, refundsOfRecord, type RefundDue, type RefundLedger } from '../db/refund-ledger';
import type { DepositAsset, ExecutionRecord, RefusedDeposit } from '../domain/execution-state';
import type { ChangeResult } from '../domain/whitelist-messages';
import { hasScopeFor, type WhitelistChange } from '../domain/whitelist-messages';
import type { TokenStore } from '../tokens/token-store';
import type { FirstRoundInput, FirstRoundResult, QuickApplyResult } from '../contracts/temporal';
import { applyQuickly } from './quick-apply';
import type { NodeTransport } from './node-transport';
import { postApply } from './storage-node-client';
import { postWebhook } from './webhooks';
import { createChainActivities, payerLookup, type ChainDeps } from './chain';
import { createRefundActivities, type RefundDeps } from './refunds';

/** One apply request to a storage node, as it ended: `error` is unset when the node's answer was good. */
export interface NodeRequestEvent {
  node: string;
  seconds: number;
  error?: unknown;
}

/** An attempt of a late node's apply that Temporal retried (attempt > 1), and how it ended. */
export interface LateNodeEvent {
  batchId: string;
  node: string;
  attempt: number;
  /** Epoch ms of the first attempt: how long the batch has waited for this node. */
  waitingSinceMs: number;
  applied: boolean;
}

export interface ActivityDeps {
  tokens: TokenStore;
  /** How long one apply request may take before it counts as a timeout. */
  nodeRequestTimeoutMs: number;
  /** Signs each request to a storage node and holds the connections to them. */
  nodeTransport: NodeTransport;
  /** Told of every apply request (the worker's metrics); activities/ itself keeps no metrics. */
  onNodeRequest?: (event: NodeRequestEvent) => void;
  /** Told of every retried attempt at a late node (the worker's waiting-batches gauges). */
  onLateNode?: (event: LateNodeEvent) => void;
  /** The read model; absent in workflow tests that run without one. */
  executions?: ExecutionStore;
  /** The refunds ledger in the read model: every deposit an execution refused is owed back there. */
  refunds?: RefundLedger;
  /** Read on every attempt, so an endpoint removed from the configuration stops being retried. */
  webhooks?: () => readonly WebhookEndpoint[];
  webhookTimeoutMs?: number;
  /** The chain watcher's chain and deposit addresses; absent when no CHAIN_RPC_URL is configured. */
  chain?: ChainDeps;
  /** The service's refunder (activities/refunds.ts); absent without CHAIN_RPC_URL. */
  refunder?: RefundDeps;
}

/** Attempts 2, 4, 8, … and then every 12th (about hourly at the 5-minute cap) are logged: bounded whatever the outage. */
const logsAttempt = (attempt: number) => (attempt & (attempt - 1)) === 0 || attempt % 12 === 0;

/** The activities of the worker, built from their dependencies (tests build them with real ones). */
export function createActivities(deps: ActivityDeps): Activities {
  const payer = deps.chain && payerLookup(deps.chain.rpcUrl);
  /**
   * A new ledger row of an on-chain transfer with its sender: the payer of that transfer (txHash,
   * transferIndex, asset) and whether it has code, read from the chain the worker watches. Best
   * effort: a node that does not answer leaves the row without one (logged), so a chain outage
   * never holds up an execution's projection.
   */
  const withSender = async (due: RefundDue): Promise<RefundDue> => {
    if (!payer || due.chain === undefined || due.sender !== undefined) return due;
    try {
      const found = await payer(due.chain, due.txHash, due.transferIndex ?? 0, (due.asset ?? 'native') as DepositAsset);
      return found === undefined ? due : { ...due, ...found };
    } catch (err) {
      Context.current().log.warn("refund's sender left unknown: the chain's node did not answer", {
        workflowId: due.workflowId,
        txHash: due.txHash,
        error: (err as Error).message,
      });
      return due;
    }
  };
  const post = async (request: NodeApplyRequest, timeoutMs: number): Promise<ChangeResult[]> => {
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    try {
      const results = await postApply(request, { timeoutMs, signal: Context.current().cancellationSignal, transport: deps.nodeTransport });
      deps.onNodeRequest?.({ node: request.node, seconds: seconds() });
      return results;
    } catch (error) {
      deps.onNodeRequest?.({ node: request.node, seconds: seconds(), error });
      throw error;
    }
  };

  /** Why the token may not make these changes (revoked, or a scope missing); undefined when it may. Throws if the tokens cannot be read. */
  const refusal = (tokenId: string, changes: readonly WhitelistChange[]): string | undefined => {
    const principal = deps.tokens.principalById(tokenId);
    if (!principal) return 'token was revoked';
    const denied = changes.find((c) => !hasScopeFor(principal.scopes, c));
    return denied && `token lacks the scope for ${denied.op_type} on the ${denied.kind} whitelist`;
  };

  return {
    ...createChainActivities(deps.chain),
    ...createRefundActivities(deps.refunder),

    /**
     * The precheck, then (only if it passes) the first round at every owning node in parallel, a
     * few quick tries each (applyQuickly): one local activity, so the happy path costs the workflow one
     * activation instead of one for the precheck and one per node. A refused token is an answer
     * (`forbidden`), not a failure; anything else the precheck throws is retried by Temporal
     * before any node is asked.
     */
    async precheckAndFirstRound(input: FirstRoundInput): Promise<FirstRoundResult> {
      const message = refusal(input.tokenId, input.changes);
      if (message !== undefined) return { status: 'forbidden', message };
      // From here on nothing throws: the precheck passed, so a node that cannot be asked is late
      // (retried after the answer), never a failure of the whole activity.
      const answers = await Promise.all(
        input.perNode.map(({ node, indexes }) =>
          applyQuickly(
            {
              node,
              batchId: input.batchId,
              position: input.position,
              tokenId: input.tokenId,
              changes: indexes.map((i) => input.changes[i]),
              deadlineAt: input.deadlineAt,
              attempts: input.attempts,
              backoffMs: input.backoffMs,
            },
            { requestTimeoutMs: deps.nodeRequestTimeoutMs, post },
          ).catch((err: unknown): QuickApplyResult => ({ status: 'late', message: `${node}: ${String(err)}`, maybeApplied: true })),
        ),
      );
      return { status: 'ran', nodes: Object.fromEntries(input.perNode.map(({ node }, i) => [node, answers[i]])) };
    },

    /**
     * Applies one node's share of a batch, or its revert (idempotent: the node keeps each change's
     * place in the order of batches, storage-node/entry-order.ts). Retried by Temporal
     * when a batch waits for a late node: those attempts are logged at a bounded rate and reported.
     */
    async applyToNode(request: NodeApplyRequest) {
      const { attempt, scheduledTimestampMs } = Context.current().info;
      if (attempt === 1) return post(request, deps.nodeRequestTimeoutMs);
      const event = { batchId: request.batchId, node: request.node, attempt, waitingSinceMs: scheduledTimestampMs };
      if (logsAttempt(attempt)) {
        Context.current().log.warn('whitelist batch still waiting for a storage node', {
          ...event,
          waitingSeconds: Math.round((Date.now() - scheduledTimestampMs) / 1000),
        });
      }
      try {
        const results = await post(request, deps.nodeRequestTimeoutMs);
        deps.onLateNode?.({ ...event, applied: true });
        return results;
      } catch (err) {
        deps.onLateNode?.({ ...event, applied: false });
        throw err;
      }
    },

    /**
     * Writes an execution's record to the read model (idempotent: a row of the same or a newer
     * version is kept). A database error throws, and the workflow's retry policy tries again.
     */
    async projectExecution(input: { workflowId: string; record: ExecutionRecord; overflow?: RefusedDeposit[] }): Promise<void> {
      if (!deps.executions)
        throw ApplicationFailure.create({ type: 'ReadModelMissing', message: 'this worker has no read model', nonRetryable: false });
      // The ledger first: a record the read model shows has its refunds owed already.
      const owed = refundsOfRecord(input.workflowId, input.record, input.overflow ?? []);
      if (owed.length > 0) {
        if (!deps.refunds)
          throw ApplicationFailure.create({ type: 'ReadModelMissing', message: 'this worker has no refunds ledger', nonRetryable: false });
        const known = await deps.refunds.existing(owed.map(refundId));
        for (const due of owed) await deps.refunds.recordDue(known.has(refundId(due)) ? due : await withSender(due));
      }
      await deps.executions.upsert(input.workflowId, input.record);
    },

    async announceRefunds(): Promise<{ announced: number }> {
      if ((deps.webhooks?.() ?? []).length === 0 || !deps.refunds) return { announced: 0 };
      const rows = await deps.refunds.unannounced(100);
      const { client, info } = Context.current();
      // The row's latest change only: a receiver that was never told a row was due is not told it
      // was voided; one told it was due, then voided and due again before a sweep, hears `due` again.
      const announce = (row: (typeof rows)[number]) =>
        row.state === 'due' ? row.event % 2 === 1 : row.state === 'void' && row.event % 2 === 0 && row.announcedEvents > 0;
      /** Hands one delivery to its workflow; one started by an earlier sweep that failed before marking it is announced all the same. */
      const hand = async (workflowId: string, delivery: WebhookDelivery) => {
        try {
          await client.workflow.start(REFUND_WEBHOOK_WORKFLOW_TYPE, {
            workflowId,
            taskQueue: info.taskQueue,
            args: [delivery],
            workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
          });
        } catch (err) {
          if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
        }
      };
      // A row settled before its sweep owes nothing any more: marked, not announced.
      for (const row of rows) if (announce(row)) await hand(refundWebhookWorkflowId(row.id, row.event), refundDelivery(row, row.event));
      await deps.refunds.markAnnounced(rows);
      // Paid rows: one refund.paid each, whoever recorded the payment.
      const paid = await deps.refunds.unannouncedPaid(100);
      for (const row of paid) await hand(refundPaidWebhookWorkflowId(row.id), refundPaidDelivery(row));
      await deps.refunds.markPaidAnnounced(paid.map((r) => r.id));
      // Held rows: one refund.held per row and reason, a person now decides.
      const held = await deps.refunds.unannouncedHeld(100);
      const now = new Date();
      for (const row of held) await hand(refundHeldWebhookWorkflowId(row.id, row.holdReason!), refundHeldDelivery(row, now));
      await deps.refunds.markHeldAnnounced(held);
      return { announced: rows.filter(announce).length + paid.length + held.length };
    },

    /**
     * Delivers one status-change event to every configured endpoint. Endpoints that answered 2xx
     * are kept in the heartbeat details, so a retry (after one endpoint failed) sends only to the
     * others; every attempt carries the same webhook-id. Throws while any endpoint is left.
     */
    async deliverWebhook(delivery: WebhookDelivery): Promise<{ delivered: number }> {
      const context = Context.current();
      // Endpoints are kept by a digest of their URL: heartbeat details are stored by Temporal, and a
      // receiver's URL may hold a secret in its path or query.
      const done = new Set<string>((context.info.heartbeatDetails as string[] | undefined) ?? []);
      const failures: string[] = [];
      for (const endpoint of deps.webhooks?.() ?? []) {
        const key = createHash('sha256').update(endpoint.url).digest('hex').slice(0, 16);
        if (done.has(key)) continue;
        try {
          await postWebhook(endpoint, delivery, { timeoutMs: deps.webhookTimeoutMs ?? 10_000, signal: context.cancellationSignal });
          done.add(key);
          context.heartbeat([...done]);
        } catch (err) {
          failures.push((err as Error).message);
        }
      }
      if (failures.length > 0) throw ApplicationFailure.create({ type: 'WebhookUndelivered', message: failures.join('; ') });
      return { delivered: done.size };
    },
  };
}
