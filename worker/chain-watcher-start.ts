import { Client, WorkflowIdReusePolicy } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import { chainClient } from '../lib/chain-client';
import { ConfigError, type WorkerConfig } from '../config/config';
import { confirmationsFor, noConfirmationsMessage } from '../config/confirmations';
import { CHAIN_WATCHER_WORKFLOW_TYPE, chainWatcherWorkflowId, type ChainWatcherInput } from '../contracts/temporal';
import { retryUntil } from './retry-until';

type ChainSettings = NonNullable<WorkerConfig['chain']>;

/**
 * The confirmations the watcher of `chain` (`evm:<chainId>`) waits for, or why it must not run:
 * none configured or known for the chain, or not fewer than the reorg window's blocks.
 */
export function chainConfirmations(
  settings: ChainSettings,
  chain: string,
): { ok: true; confirmations: number } | { ok: false; reason: string } {
  const confirmations = confirmationsFor(settings.confirmations, chain);
  if (confirmations === undefined) return { ok: false, reason: noConfirmationsMessage(chain) };
  if (confirmations >= settings.windowSize)
    return {
      ok: false,
      reason: `CHAIN_REORG_WINDOW (${settings.windowSize}) must be more than the ${confirmations} confirmations of ${chain}`,
    };
  return { ok: true, confirmations };
}

/** The activities' view of chainConfirmations: a number, or undefined when the watcher must not read. */
export const confirmationsOf =
  (settings: ChainSettings) =>
  (chain: string): number | undefined => {
    const outcome = chainConfirmations(settings, chain);
    return outcome.ok ? outcome.confirmations : undefined;
  };

/**
 * Makes sure the chain's watcher runs: starts `chain-watcher:evm:<chainId>` with USE_EXISTING, so
 * that however many workers do this, one watcher runs per chain, and a running one (with its
 * state) is left alone. The chain id comes from the node. Tried again every 5 s until it succeeds
 * or `signal` aborts (a chain or Temporal that is down at start only delays the watcher).
 * Answers the watcher's workflow id. Rejects with a ConfigError, not retried, when the chain has no
 * confirmations (chainConfirmations): the worker refuses to run rather than watch it with a guess.
 */
export async function ensureChainWatcher(
  connection: NativeConnection,
  config: WorkerConfig,
  signal: AbortSignal,
  onError: (err: Error) => void,
): Promise<string | undefined> {
  const chainSettings = config.chain;
  if (!chainSettings) return undefined;
  const client = new Client({ connection, namespace: config.temporal.namespace });
  const rpc = chainClient(chainSettings.rpcUrl);
  return retryUntil(
    async () => {
      const chain = `evm:${await rpc.getChainId()}`;
      const confirmations = chainConfirmations(chainSettings, chain);
      if (!confirmations.ok) throw new ConfigError(confirmations.reason);
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
    },
    { signal, onError, fatal: (err) => err instanceof ConfigError },
  );
}
