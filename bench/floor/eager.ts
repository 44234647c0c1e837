import { randomUUID } from 'node:crypto';
import { Client } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { bundleInChild } from '../../worker/workflow-bundle';
import { emptyAnswerUpdate } from './workflows';

/** How long the empty workflow waits for its Update (as a batch waits until its deadline and margin). */
const WAIT_MS = 6_000;

export interface EagerFloor {
  /** One empty workflow, started eagerly and answered by the Update after the start; rejects if the server did not start it eagerly. */
  run(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The eager floor's worker in the bench's own process, on one NativeConnection with its client,
 * as the API hosts its batch worker (api/batch-worker.ts): eager start needs the worker in the
 * client's process.
 */
export async function startEagerFloor(address: string, namespace: string, taskQueue: string): Promise<EagerFloor> {
  const code = await bundleInChild({ workflowsPath: require.resolve('./workflows') });
  const connection = await NativeConnection.connect({ address });
  const worker = await Worker.create({ connection, namespace, taskQueue, workflowBundle: { code }, enableNonLocalActivities: false });
  const running = worker.run();
  const client = new Client({ connection, namespace });
  return {
    async run() {
      const handle = await client.workflow.start('emptyEagerWorkflow', {
        workflowId: `bench-floor-eager:${randomUUID()}`,
        taskQueue,
        args: [WAIT_MS],
        workflowIdConflictPolicy: 'FAIL',
        requestEagerStart: true,
      });
      await handle.executeUpdate(emptyAnswerUpdate);
      if (!handle.eagerlyStarted) throw new Error('the server did not start the empty workflow eagerly');
    },
    async close() {
      worker.shutdown();
      await running;
      await connection.close();
    },
  };
}
