import { randomUUID } from 'node:crypto';
import { Client } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { awaitBatchOutcomeMemo } from '../../api/batch-outcome-history';
import { bundleInChild } from '../../worker/workflow-bundle';

export interface EagerFloor {
  /** One empty workflow, started eagerly, its answer read from its memo as the API reads a batch's; rejects if the server did not start it eagerly. */
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
      const handle = await client.workflow.start('emptyMemoWorkflow', {
        workflowId: `bench-floor-eager:${randomUUID()}`,
        taskQueue,
        workflowIdConflictPolicy: 'FAIL',
        requestEagerStart: true,
      });
      await awaitBatchOutcomeMemo(client, handle.workflowId, handle.firstExecutionRunId);
      if (!handle.eagerlyStarted) throw new Error('the server did not start the empty workflow eagerly');
    },
    async close() {
      worker.shutdown();
      await running;
      await connection.close();
    },
  };
}
