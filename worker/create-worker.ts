import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities } from '../activities';
import type { Config } from '../config/config';
import { TokenStore } from '../tokens/token-store';
import { temporalConnectionOptions } from '../config/temporal-connection';

export interface RunningWorker {
  worker: Worker;
  connection: NativeConnection;
  /** Resolves when the worker has stopped (after shutdown() or a fatal error). */
  done: Promise<void>;
  /** Drains: stops polling, lets running tasks finish, then closes the connection. */
  shutdown(): Promise<void>;
}

/** Builds and starts a worker for the service's workflows and activities. */
export async function startWorker(config: Config, address: string, overrides: Partial<WorkerOptions> = {}): Promise<RunningWorker> {
  const connection = await NativeConnection.connect(temporalConnectionOptions(config, address));
  const worker = await Worker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    workflowsPath: require.resolve('../workflows'),
    activities: createActivities({ tokens: new TokenStore(config.apiTokensFile), nodeRequestTimeoutMs: 10_000 }),
    ...overrides,
  });
  const done = worker.run().finally(() => connection.close().catch(() => undefined));
  return {
    worker,
    connection,
    done,
    async shutdown() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await done;
    },
  };
}
