import { ApplicationFailure, Context } from '@temporalio/activity';
import { hasScopeFor, type WhitelistChange } from '../domain/whitelist-messages';
import type { TokenStore } from '../tokens/token-store';
import { NodeFailure } from '../workflows/definitions';
import { postApply, type ApplyRequest } from './storage-node-client';

export interface ActivityDeps {
  tokens: TokenStore;
  /** How long one apply request may take before it counts as a timeout. */
  nodeRequestTimeoutMs: number;
}

/** The activities of the worker, built from their dependencies (tests build them with real ones). */
export function createActivities(deps: ActivityDeps) {
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
      return postApply(request, { timeoutMs: deps.nodeRequestTimeoutMs, signal: Context.current().cancellationSignal });
    },
  };
}
