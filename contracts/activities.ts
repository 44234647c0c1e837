/**
 * The activities' signatures: what the workflows call (proxyActivities) and the worker's
 * activities implement (activities/index.ts). They meet here, so neither imports the other.
 */
import type { ExecutionRecord } from '../domain/execution-state';
import type { ChangeResult } from '../domain/whitelist-messages';
import type { ApplyRequest } from './storage-node-protocol';
import type { FirstRoundInput, FirstRoundResult } from './temporal';
import type { WebhookDelivery } from './webhooks';

/** One node's share of a batch: the wire request and the node it goes to. */
export interface NodeApplyRequest extends ApplyRequest {
  node: string;
}

export interface ExecutionActivities {
  /** Writes an execution's record to the read model; a row of the same or a newer version is kept. */
  projectExecution(input: { workflowId: string; record: ExecutionRecord }): Promise<void>;
  /** Delivers one status-change event to every configured endpoint. */
  deliverWebhook(delivery: WebhookDelivery): Promise<{ delivered: number }>;
}

export interface WhitelistActivities {
  /** Re-checks the batch's token, then the first round at every owning node in parallel. */
  precheckAndFirstRound(input: FirstRoundInput): Promise<FirstRoundResult>;
  /** Applies one node's share of a batch, or its revert. */
  applyToNode(request: NodeApplyRequest): Promise<ChangeResult[]>;
}

export type Activities = ExecutionActivities & WhitelistActivities;
