import { Client } from '@temporalio/client';
import type { Worker } from '@temporalio/worker';
import type { Logger } from 'pino';
import { createActivities, type NodeRequestEvent } from '../activities';
import type { NodeTransport } from '../activities/node-transport';
import type { Config } from '../config/config';
import { temporalConnectionOptions } from '../config/temporal-connection';
import type { TokenStore } from '../tokens/token-store';
import { bundleInChild, SHARED_WORKFLOW_MODULES } from '../worker/workflow-bundle';
import { settleAbandoned } from './temporal-call';

/** How long to wait before trying again when the batch worker could not start (Temporal down, say). */
const RETRY_MS = 2_000;
/** How long `close` waits for the worker to drain (its shutdownGraceTime is 5 s). */
const CLOSE_WAIT_MS = 8_000;

/** What starts a batch eagerly: a client on the batch worker's own connection, and its task queue. */
export interface EagerStart {
  client: Client;
  taskQueue: string;
}

export interface BatchWorker {
  /** Set while the worker runs; unset while it starts or after it stopped (batches then use update-with-start). */
  eager(): EagerStart | undefined;
  /** Stops polling, lets running workflow tasks finish, closes the connection. */
  close(): Promise<void>;
}

/**
 * The API's own worker for whitelist batches (decision 0015): it polls `config.temporal.batchTaskQueue`
 * with the workflow code and the one local activity a batch's first workflow task runs
 * (`precheckAndFirstRound`), on a NativeConnection that the API's eager client shares. A batch
 * started with `requestEagerStart` then gets its first workflow task in the start call's answer
 * and runs it here, without a trip through the task queue. The batch's other activities run on
 * the workers (`enableNonLocalActivities: false`). It starts in the background, as the API's
 * lazy client does, and keeps trying while Temporal is down.
 */
export function startBatchWorker(
  config: Config,
  options: {
    temporalAddress: string;
    tokens: TokenStore;
    nodeTransport: NodeTransport;
    logger: Logger;
    onNodeRequest?: (event: NodeRequestEvent) => void;
  },
): BatchWorker {
  const taskQueue = config.temporal.batchTaskQueue;
  if (taskQueue === undefined) return { eager: () => undefined, close: async () => undefined };
  const logger = options.logger.child({ component: 'batch-worker', taskQueue });
  let closing = false;
  let current: { worker: Worker; client: Client; running: Promise<void> } | undefined;
  let wake: (() => void) | undefined;
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  const runOnce = async (): Promise<void> => {
    // Loaded only when the batch worker is on: the SDK's native runtime costs an API without it ~15 MB.
    const { NativeConnection, Worker } = await import('@temporalio/worker');
    const code = await bundleInChild({ workflowsPath: require.resolve('../workflows'), preloadModules: [...SHARED_WORKFLOW_MODULES] });
    const connection = await NativeConnection.connect(temporalConnectionOptions(config, options.temporalAddress));
    try {
      const { precheckAndFirstRound } = createActivities({
        tokens: options.tokens,
        nodeRequestTimeoutMs: 10_000,
        nodeTransport: options.nodeTransport,
        onNodeRequest: options.onNodeRequest,
      });
      const worker = await Worker.create({
        connection,
        namespace: config.temporal.namespace,
        taskQueue,
        workflowBundle: { code },
        activities: { precheckAndFirstRound },
        // Only local activities here: the batch's other activities are scheduled on the workers' queue.
        enableNonLocalActivities: false,
        // Batches end within their deadline unless a node is late; a few dozen cached is plenty.
        maxCachedWorkflows: 50,
        shutdownGraceTime: '5s',
      });
      const client = new Client({ connection, namespace: config.temporal.namespace });
      const running = worker.run();
      if (closing && worker.getState() === 'RUNNING') worker.shutdown();
      else current = { worker, client, running };
      logger.info('batch worker polling');
      try {
        await running;
      } finally {
        current = undefined;
        await settleAbandoned(client);
      }
    } finally {
      await connection.close().catch(() => undefined);
    }
  };

  const loop = (async () => {
    while (!closing) {
      try {
        await runOnce();
      } catch (err) {
        if (!closing) logger.warn({ reason: (err as Error).message }, 'batch worker not running; batches use update-with-start meanwhile');
      }
      if (!closing) await pause(RETRY_MS);
    }
  })();

  return {
    eager: () => (current && current.worker.getState() === 'RUNNING' ? { client: current.client, taskQueue } : undefined),
    async close() {
      closing = true;
      wake?.();
      if (current?.worker.getState() === 'RUNNING') current.worker.shutdown();
      // A connect that hangs (an address that never answers) is not waited for: once it ends,
      // the loop sees `closing` and closes what it opened.
      await Promise.race([loop, new Promise((resolve) => setTimeout(resolve, CLOSE_WAIT_MS).unref())]);
    },
  };
}
