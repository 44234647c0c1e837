// The workflow bundle's entry point: every workflow the worker registers.
export { executionWorkflow } from './execution';
export { whitelistBatchWorkflow } from './whitelist-batch';
export { whitelistRepairWorkflow } from './whitelist-repair';
export { chainWatcherWorkflow } from './chain-watcher';
export { executionWebhooksWorkflow } from './execution-webhooks';
export { refundAnnouncerWorkflow, refundWebhookWorkflow } from './refund-webhooks';
export { refundAddressWorkflow, refundSweepWorkflow } from './refunds';
