import { Client, WorkflowIdReusePolicy } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import { chainClient } from '../activities/chain';
import type { Config } from '../config/config';
import { CHAIN_WATCHER_WORKFLOW_TYPE, chainWatcherWorkflowId, type ChainWatcherInput } from '../contracts/temporal';

const RETRY_MS = 5_000;

/**
 * Makes sure the chain's watcher runs: starts `chain-watcher:evm:<chainId>` with USE_EXISTING, so
 * that however many workers do this, one watcher runs per chain, and a running one (with its
 * state) is left alone. The chain id comes from the node. Tried again every 5 s until it succeeds
 * or `signal` aborts (a chain or Temporal that is down at start only delays the watcher).
 * Answers the watcher's workflow id.
 */
export async function ensureChainWatcher(
  connection: NativeConnection,
  config: Config,
  signal: AbortSignal,
  onError: (err: Error) => void,
): Promise<string | undefined> {
  const chainSettings = config.chain;
  if (!chainSettings) return undefined;
  const client = new Client({ connection, namespace: config.temporal.namespace });
  const rpc = chainClient(chainSettings.rpcUrl);
  while (!signal.aborted) {
    try {
      const chain = `evm:${await rpc.getChainId()}`;
      const workflowId = chainWatcherWorkflowId(chain);
      const input: ChainWatcherInput = { chain };
      await client.workflow.start(CHAIN_WATCHER_WORKFLOW_TYPE, {
        workflowId,
        taskQueue: config.temporal.taskQueue,
        args: [input],
        workflowIdConflictPolicy: 'USE_EXISTING',
        // A watcher that was terminated by hand is started afresh (from the head).
        workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
      });
      return workflowId;
    } catch (err) {
      onError(err as Error);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, RETRY_MS);
        signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
      });
    }
  }
  return undefined;
}
