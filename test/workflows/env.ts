import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { projectRoot } from '../../config/config';
import { executionStatusKey, executionWalletKey, serviceTaskQueues } from '../../contracts/temporal';
import { SHARED_WORKFLOW_MODULES } from '../../worker/workflow-bundle';

/**
 * Temporal's time-skipping test server (Java, in memory), fetched once by scripts/test-server.sh
 * into the per-user cache: timers, expiry, lingering and activity retry backoff pass in
 * milliseconds. Each test file gets an environment and a worker on a fresh task queue of its own.
 */
export async function timeSkippingEnv(): Promise<TestWorkflowEnvironment> {
  // Core logs every replay warning; these tests provoke failures on purpose.
  if (!runtimeInstalled) {
    try {
      Runtime.install({ logger: new DefaultLogger('ERROR') });
    } catch {
      // another test file of this mocha run installed it already
    }
    runtimeInstalled = true;
  }
  const executable = execFileSync('bash', [path.join(projectRoot, 'scripts', 'test-server.sh')], { encoding: 'utf8' }).trim();
  const env = await TestWorkflowEnvironment.createTimeSkipping({ server: { executable: { type: 'existing-path', path: executable } } });
  // The execution workflow keeps its search attributes current, as on the real server.
  const keyword = temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;
  await env.connection.operatorService.addSearchAttributes({
    namespace: env.namespace ?? 'default',
    searchAttributes: { [executionStatusKey.name]: keyword, [executionWalletKey.name]: keyword },
  });
  return env;
}
let runtimeInstalled = false;

/**
 * Workers for the service's workflows with the given (mocked) activities, on `taskQueue` and the
 * queues the service names from it (refunds, webhook deliveries), as a service worker polls them;
 * run them for the file's tests. `worker` is the one on `taskQueue`.
 */
export async function workflowWorker(
  env: TestWorkflowEnvironment,
  taskQueue: string,
  activities: object,
): Promise<{ worker: Worker; stop: () => Promise<void> }> {
  // Shared as the service's worker shares them (SHARED_WORKFLOW_MODULES): every run of a file's
  // tests in one V8 context, with one evaluation of the workflow modules.
  const workflowBundle = await bundleWorkflowCode({
    workflowsPath: require.resolve('../../workflows'),
    preloadModules: [...SHARED_WORKFLOW_MODULES],
    logger: new DefaultLogger('WARN'),
  });
  const workers = await Promise.all(
    serviceTaskQueues(taskQueue).map((queue) =>
      Worker.create({ connection: env.nativeConnection, taskQueue: queue, workflowBundle, activities }),
    ),
  );
  const running = workers.map((w) => w.run());
  return {
    worker: workers[0],
    async stop() {
      for (const w of workers) w.shutdown();
      await Promise.all(running);
    },
  };
}

/** The event types of a workflow's history, as readable names (EVENT_TYPE_… without the prefix). */
export async function eventTypes(env: TestWorkflowEnvironment, workflowId: string): Promise<string[]> {
  const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).map((e) => String(temporal.api.enums.v1.EventType[e.eventType ?? 0]).replace(/^EVENT_TYPE_/, ''));
}

/**
 * The Update events of a history. The time-skipping test server records the workflow task that ran
 * a rejected Update's validator, where the real server's speculative task leaves no event at all
 * (pinned against the dev server in test/integration/idempotent-retries.test.ts); an Update that was rejected
 * adds no Update event on either.
 */
export const updateEvents = (types: string[]) => types.filter((t) => t.startsWith('WORKFLOW_EXECUTION_UPDATE_'));
