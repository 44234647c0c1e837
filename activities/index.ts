import type { Activities } from '../contracts/activities';
import { createChainActivities, type ChainDeps } from './chain';
import { createReadModelActivities, type ReadModelDeps } from './read-model';
import { createRefundAnnouncerActivities, type RefundAnnouncerDeps } from './refund-announcer';
import { createRefundActivities, type RefundDeps } from './refunds';
import { createWebhookDeliveryActivities, type WebhookDeliveryDeps } from './webhook-delivery';
import { createWhitelistBatchActivities, type WhitelistBatchDeps } from './whitelist-batches';

export type { LateNodeEvent, NodeRequestEvent } from './whitelist-batches';

/** What the worker's activities are built from: each area's dependencies, the same one wherever two areas share it. */
export interface ActivityDeps extends WhitelistBatchDeps, ReadModelDeps, RefundAnnouncerDeps, WebhookDeliveryDeps {
  /** The chain watcher's chain and deposit addresses; absent when no CHAIN_RPC_URL is configured. */
  chain?: ChainDeps;
  /** The service's refunder (activities/refunds.ts); absent without CHAIN_RPC_URL. */
  refunder?: RefundDeps;
}

/**
 * The activities of the worker, built from their dependencies (tests build them with real ones):
 * one module per area, each implementing its part of contracts/activities.ts. The names are
 * Temporal's (the workflows call them by name): they never change.
 */
export function createActivities(deps: ActivityDeps): Activities {
  return {
    ...createChainActivities(deps.chain),
    ...createRefundActivities(deps.refunder),
    ...createWhitelistBatchActivities(deps),
    ...createReadModelActivities(deps),
    ...createRefundAnnouncerActivities(deps),
    ...createWebhookDeliveryActivities(deps),
  };
}
