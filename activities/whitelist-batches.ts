import { ApplicationFailure, Context } from '@temporalio/activity';
import type { NodeApplyRequest, RepairPageInput, RepairPageResult, WhitelistActivities } from '../contracts/activities';
import { ReplicaClient, replicaPage, repairsOf } from './replica-repair';
import type { FirstRoundInput, FirstRoundResult, FirstRoundNodeResult } from '../contracts/temporal';
import { hasScopeFor, type ChangeResult, type WhitelistChange } from '../domain/whitelist-messages';
import type { TokenStore } from '../tokens/token-store';
import type { NodeTransport } from './node-transport';
import { applyFirstRound } from './first-round-apply';
import { postApply } from './storage-node-client';

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

export interface WhitelistBatchDeps {
  tokens: TokenStore;
  /** How long one apply request may take before it counts as a timeout. */
  nodeRequestTimeoutMs: number;
  /** Signs each request to a storage node and holds the connections to them. */
  nodeTransport: NodeTransport;
  /** Told of every apply request (the worker's metrics); activities/ itself keeps no metrics. */
  onNodeRequest?: (event: NodeRequestEvent) => void;
  /** Told of every retried attempt at a late node (the worker's waiting-batches gauges). */
  onLateNode?: (event: LateNodeEvent) => void;
  /** STORAGE_NODES and STORAGE_REPLICAS, for the anti-entropy repair; absent: no repair runs. */
  storagePlacement?: { nodes: readonly string[]; replicas: number };
}

/**
 * Once a majority of each change's replicas applied it, the replicas still asked get this share of
 * the time that took (at least QUORUM_GRACE_MIN_MS, at most QUORUM_GRACE_MAX_MS) before they are
 * cut off. Three nodes applying one batch answer within a millisecond of each other as a rule
 * (here: the third 0.2 ms after the second for one change, 0.6 ms for 100, p50; 0.9 and 2.6 ms
 * p90), and a replica cut off costs the batch a retried activity after its answer (two more tasks
 * and a new connection); one that is slow or down costs the answer this grace at most.
 */
const QUORUM_GRACE_SHARE = 0.5;
const QUORUM_GRACE_MIN_MS = 1;
const QUORUM_GRACE_MAX_MS = 5;

/**
 * The first round's wait: every node's answer, or, once a majority of each change's replicas
 * applied it (`quorum`) and a short grace passed, the answers so far, the nodes still asked cut
 * off (`stop`) and counted late, maybe applied: the workflow completes them after the answer.
 */
function quorumWatch(input: FirstRoundInput): {
  stop: AbortSignal;
  settle: (answers: Promise<FirstRoundNodeResult>[]) => Promise<FirstRoundNodeResult[]>;
} {
  const controller = new AbortController();
  const startedAt = performance.now();
  return {
    stop: controller.signal,
    settle: (pending) =>
      new Promise((resolve) => {
        const answers: Array<FirstRoundNodeResult | undefined> = pending.map(() => undefined);
        const applied = input.changes.map(() => 0);
        let open = pending.length;
        let grace: NodeJS.Timeout | undefined;
        const finish = () => {
          clearTimeout(grace);
          controller.abort();
          resolve(
            answers.map(
              (answer, i) =>
                answer ?? { status: 'late', message: `${input.perNode[i].node}: not waited for past a majority`, maybeApplied: true },
            ),
          );
        };
        if (open === 0) finish();
        pending.forEach((promise, i) => {
          void promise.then((answer) => {
            if (controller.signal.aborted) return;
            answers[i] = answer;
            open--;
            if (answer.status === 'applied') for (const index of input.perNode[i].indexes) applied[index]++;
            const quorum = input.quorum;
            if (open === 0) finish();
            else if (grace === undefined && quorum !== undefined && applied.every((count, index) => count >= quorum[index])) {
              const share = (performance.now() - startedAt) * QUORUM_GRACE_SHARE;
              const ms = Math.min(QUORUM_GRACE_MAX_MS, Math.max(QUORUM_GRACE_MIN_MS, share), input.deadlineAt - Date.now());
              grace = setTimeout(finish, Math.max(0, ms));
            }
          });
        });
      }),
  };
}

/** Attempts 2, 4, 8, … and then every 12th (about hourly at the 5-minute cap) are logged: bounded whatever the outage. */
const logsAttempt = (attempt: number) => (attempt & (attempt - 1)) === 0 || attempt % 12 === 0;

/** The whitelist batch workflow's activities: the token's precheck and each storage node's share of a batch. */
export function createWhitelistBatchActivities(deps: WhitelistBatchDeps): WhitelistActivities {
  const post = async (request: NodeApplyRequest, timeoutMs: number, stop?: AbortSignal): Promise<ChangeResult[]> => {
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    const cancelled = Context.current().cancellationSignal;
    const signal = stop ? AbortSignal.any([cancelled, stop]) : cancelled;
    try {
      const results = await postApply(request, { timeoutMs, signal, transport: deps.nodeTransport });
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

  const replicas = new ReplicaClient(deps.nodeTransport, deps.nodeRequestTimeoutMs);

  return {
    /**
     * One page of anti-entropy: every node's histories after `after`, merged per entry, and the
     * merge written to each replica that lacks part of it (a node that came back empty, one that
     * missed a batch, a node added since). A node that does not answer is skipped: the next pass
     * repairs it. Idempotent: a replica that holds everything takes nothing.
     */
    async repairPage(input: RepairPageInput): Promise<RepairPageResult> {
      const placement = deps.storagePlacement;
      if (!placement || placement.nodes.length === 0)
        throw ApplicationFailure.create({ type: 'NoStorageNodes', message: 'no storage nodes configured', nonRetryable: true });
      const page = await replicaPage(replicas, placement, input.kind, input.after, input.limit);
      const unreachable = new Set(page.unreachable);
      let repaired = 0;
      await Promise.all(
        [...repairsOf(input.kind, page.views)].map(async ([node, entries]) => {
          try {
            await replicas.repair(node, entries);
            repaired += entries.length;
          } catch {
            unreachable.add(node);
          }
        }),
      );
      return {
        ...(page.next === undefined ? {} : { next: page.next }),
        entries: page.views.length,
        repaired,
        unreachable: [...unreachable],
        replicas: page.replicas,
      };
    },

    /** Marks each node's incarnation refilled; a node that does not answer stays as it is (the next pass marks it). */
    async confirmRefilled(marks) {
      await Promise.all(marks.map(({ node, incarnation }) => replicas.repair(node, [], incarnation).catch(() => undefined)));
    },

    /**
     * The precheck, then (only if it passes) the first round at every owning node in parallel, a
     * few quick tries each (applyFirstRound): one local activity, so the happy path costs the workflow one
     * activation instead of one for the precheck and one per node. A refused token is an answer
     * (`forbidden`), not a failure; anything else the precheck throws is retried by Temporal
     * before any node is asked.
     */
    async precheckAndFirstRound(input: FirstRoundInput): Promise<FirstRoundResult> {
      const message = refusal(input.tokenId, input.changes);
      if (message !== undefined) return { status: 'forbidden', message };
      // From here on nothing throws: the precheck passed, so a node that cannot be asked is late
      // (retried after the answer), never a failure of the whole activity.
      const quorum = quorumWatch(input);
      const answers = await quorum.settle(
        input.perNode.map(({ node, indexes }) =>
          applyFirstRound(
            {
              node,
              batchId: input.batchId,
              position: input.position,
              tokenId: input.tokenId,
              changes: indexes.map((i) => input.changes[i]),
              indexes,
              deadlineAt: input.deadlineAt,
              attempts: input.attempts,
              backoffMs: input.backoffMs,
            },
            { requestTimeoutMs: deps.nodeRequestTimeoutMs, post: (request, timeoutMs) => post(request, timeoutMs, quorum.stop) },
          ).catch((err: unknown): FirstRoundNodeResult => ({ status: 'late', message: `${node}: ${String(err)}`, maybeApplied: true })),
        ),
      );
      return { status: 'ran', nodes: Object.fromEntries(input.perNode.map(({ node }, i) => [node, answers[i]])) };
    },

    /**
     * Applies one node's share of a batch, or its revert (idempotent: the node keeps each change's
     * place in the order of batches, domain/entry-order.ts). Retried by Temporal
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
  };
}
