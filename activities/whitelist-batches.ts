import { Context } from '@temporalio/activity';
import type { NodeApplyRequest, WhitelistActivities } from '../contracts/activities';
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
}

/** Attempts 2, 4, 8, … and then every 12th (about hourly at the 5-minute cap) are logged: bounded whatever the outage. */
const logsAttempt = (attempt: number) => (attempt & (attempt - 1)) === 0 || attempt % 12 === 0;

/** The whitelist batch workflow's activities: the token's precheck and each storage node's share of a batch. */
export function createWhitelistBatchActivities(deps: WhitelistBatchDeps): WhitelistActivities {
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
      const answers = await Promise.all(
        input.perNode.map(({ node, indexes }) =>
          applyFirstRound(
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
          ).catch((err: unknown): FirstRoundNodeResult => ({ status: 'late', message: `${node}: ${String(err)}`, maybeApplied: true })),
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
  };
}
