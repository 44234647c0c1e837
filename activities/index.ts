import { ApplicationFailure, Context } from '@temporalio/activity';
import type { NodeResult } from '../domain/whitelist-batch-plan';
import { hasScopeFor, type WhitelistChange } from '../domain/whitelist-messages';
import type { TokenStore } from '../tokens/token-store';
import { NodeFailure, type QuickApplyInput } from '../workflows/definitions';
import { applyQuickly } from './quick-apply';
import { postApply, type ApplyRequest } from './storage-node-client';

/** One apply request to a storage node, as it ended: `error` is unset when the node's answer was good. */
export interface NodeRequestEvent {
  node: string;
  seconds: number;
  error?: unknown;
}

export interface ActivityDeps {
  tokens: TokenStore;
  /** How long one apply request may take before it counts as a timeout. */
  nodeRequestTimeoutMs: number;
  /** Told of every apply request (the worker's metrics); activities/ itself keeps no metrics. */
  onNodeRequest?: (event: NodeRequestEvent) => void;
}

/** The activities of the worker, built from their dependencies (tests build them with real ones). */
export function createActivities(deps: ActivityDeps) {
  const post = async (request: ApplyRequest, timeoutMs: number): Promise<NodeResult[]> => {
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    try {
      const results = await postApply(request, { timeoutMs, signal: Context.current().cancellationSignal });
      deps.onNodeRequest?.({ node: request.node, seconds: seconds() });
      return results;
    } catch (error) {
      deps.onNodeRequest?.({ node: request.node, seconds: seconds(), error });
      throw error;
    }
  };

  return {
    /** The batch's authorisation precheck: the token must still exist and cover every change. */
    async authorizeBatch(input: { tokenId: string; changes: WhitelistChange[] }): Promise<void> {
      const principal = deps.tokens.principalById(input.tokenId);
      if (!principal) {
        throw ApplicationFailure.create({ type: NodeFailure.forbidden, message: 'token was revoked', nonRetryable: true });
      }
      const denied = input.changes.find((c) => !hasScopeFor(principal.scopes, c));
      if (denied) {
        throw ApplicationFailure.create({ type: NodeFailure.forbidden, message: `token lacks the scope for ${denied.op_type} on the ${denied.kind} whitelist`, nonRetryable: true });
      }
    },

    /** Applies one node's share of a batch (idempotent per batchId on the node). */
    async applyToNode(request: ApplyRequest) {
      return post(request, deps.nodeRequestTimeoutMs);
    },

    /** A node's share of a batch, tried until the batch's deadline; answers instead of throwing (run as a local activity). */
    async applyToNodeQuickly(input: QuickApplyInput) {
      return applyQuickly(input, { requestTimeoutMs: deps.nodeRequestTimeoutMs, post });
    },
  };
}
