import { NativeConnection, Worker } from '@temporalio/worker';
import { envSettings } from '../../config/read-settings';
import { benchSettings } from '../settings';
import * as activities from './activities';

// A worker for bench/floor/workflows.ts only, as a process of its own like the service's worker,
// on FLOOR_TASK_QUEUE of TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE (bench/stack.ts starts it).

async function main(): Promise<void> {
  const { TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: namespace } = envSettings();
  const { FLOOR_TASK_QUEUE: taskQueue, FLOOR_CACHED_WORKFLOWS: maxCachedWorkflows } = benchSettings();
  if (!address || !namespace || !taskQueue) throw new Error('TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE and FLOOR_TASK_QUEUE must be set');
  const connection = await NativeConnection.connect({ address });
  const worker = await Worker.create({
    connection,
    namespace,
    taskQueue,
    workflowsPath: require.resolve('./workflows'),
    activities,
    ...(maxCachedWorkflows === undefined ? {} : { maxCachedWorkflows }),
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => worker.shutdown());
  console.log(`floor worker polling task queue ${taskQueue}`);
  await worker.run();
  await connection.close();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
