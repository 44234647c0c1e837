import type { LogLevel } from '@temporalio/worker';
import type { Logger } from 'pino';
import { loadConfigOf, type WorkerConfig } from '../config/config';
import { secretsOf } from '../config/secrets';
import { redactor } from '../lib/redact';
import { createLogger, exitAfterFlush, exitOnFailure, lifecycleLogger } from '../config/logger';
import { sharedReadModel } from '../config/read-model-check';
import { startWorker } from './create-worker';
import { serviceTaskQueues } from '../contracts/temporal';
import { createWorkerMetrics, openRunsMetrics, refundLedgerMetrics } from './metrics';
import { RefundLedger } from '../db/refund-ledger';
import { startMetricsServer, type MetricsServer } from './metrics-server';
import { installRuntime } from './runtime';
import { startTracing } from '../lib/tracing';

/** The process's logger, once main has read the config that sets its level. */
let processLogger: Logger | undefined;

/** `npm run worker`: one worker against TEMPORAL_ADDRESS (default 127.0.0.1:7233), with its metrics endpoint. */
async function main() {
  const config: WorkerConfig = loadConfigOf('worker');
  const secrets = secretsOf(config);
  const logger = createLogger('worker', config.logLevel, undefined, secrets);
  processLogger = logger;
  const tracing = await startTracing(
    config.tracing,
    'worker',
    (err, failures) => logger.warn({ err, failures, url: config.tracing?.url }, 'spans not exported'),
    redactor(secrets),
  );
  const lifecycle = lifecycleLogger(logger);
  const port = config.workerMetricsPort;
  const sdkLevel: LogLevel = config.sdkLogLevel;
  const metrics = createWorkerMetrics(config.storageNodes ?? []);
  // The SDK's own log (bundler statistics, state changes) at WARN unless asked: SDK_LOG_LEVEL=INFO.
  // A run the core wedges is released by recreating the worker (its cache goes with it).
  let wedged: (() => void) | undefined;
  const { sdkMetricsUrl } = await installRuntime(logger, sdkLevel, (meta) => {
    metrics.recordCoreWedge();
    logger.error({ core: meta }, 'the Temporal core wedged a workflow run in this worker; recreating the worker to release it');
    wedged?.();
  });

  let metricsServer: MetricsServer | undefined;
  if (port !== undefined) {
    // A busy port costs the metrics, not the worker: executions matter more than their counters.
    // OPERATOR_HOST (loopback unless set), never HOST: an API exposed with HOST=0.0.0.0 must not
    // take the worker's metrics onto the public network with it (decision 0066).
    metricsServer = await startMetricsServer({ host: config.operatorHost, port, registry: metrics.registry, sdkMetricsUrl }).catch(
      (err) => {
        logger.warn({ port, reason: (err as Error).message }, 'worker metrics endpoint not started');
        return undefined;
      },
    );
    if (metricsServer) lifecycle.info({ url: metricsServer.url }, 'worker metrics listening');
  }

  const address = config.temporal.address ?? '127.0.0.1:7233';
  if (!(await sharedReadModel(config, address, logger))) return exitAfterFlush(logger, 1);
  const start = () =>
    startWorker(
      config,
      address,
      {
        // On shutdown, running activities (each bounded by its 10 s node request timeout) get 10 s to
        // finish; 13 s forces the stop, before `npm start` would SIGKILL us at 15 s.
        shutdownGraceTime: '10s',
        shutdownForceTime: '13s',
      },
      {
        onNodeRequest: metrics.recordNodeRequest,
        onLateNode: metrics.recordLateNode,
        onChainEvent: metrics.recordChainEvent,
        onRefundEvent: metrics.recordRefundEvent,
        onCatchUp: metrics.recordCatchUp,
        logger,
        tracing,
      },
    );
  let running = await start();
  let ledger = new RefundLedger(running.database);
  refundLedgerMetrics(metrics.registry, () => ledger);
  openRunsMetrics(metrics.registry, () => running.slots && { cached: running.slots.snapshot().cached, bound: config.workerOpenRuns });
  // Ready once new workflows come here: its version is current (WORKER_PROMOTE=current), or an
  // operator will make it so (none). A worker whose version the server refused still serves the
  // workflows pinned to it.
  await running.promoted.catch((err: Error) =>
    logger.error(
      { version: running.version, err: err.message },
      'worker version not made current; promote it with temporal worker deployment set-current-version',
    ),
  );
  lifecycle.info(
    {
      taskQueue: config.temporal.taskQueue,
      taskQueues: serviceTaskQueues(config.temporal.taskQueue),
      address,
      namespace: config.temporal.namespace,
      version: running.version,
    },
    // The message is the ready line supervisors and tests wait for, unchanged; the other queues are in `taskQueues`.
    `worker polling task queue ${config.temporal.taskQueue}`,
  );
  let stopping = false;
  void running.chainWatcher.then(
    (workflowId) => {
      if (workflowId) lifecycle.info({ workflowId, rpcUrl: config.chain?.rpcUrl }, `chain watcher ${workflowId} running`);
    },
    (err: Error) => {
      // A chain it cannot watch safely (no confirmations for it): the worker refuses to run, as it
      // does for any other bad setting, rather than run without the watcher it was configured for.
      lifecycle.error({ err: err.message }, 'worker refused its chain; stopping');
      process.exitCode = 1;
      stopping = true;
      void running.shutdown();
    },
  );
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      stopping = true;
      lifecycle.info({ signal }, 'worker draining');
      void running.shutdown();
    });
  }
  // A wedged run: drain this worker (the wedged run's task cannot complete, so the drain ends at
  // shutdownForceTime at worst) and start a new one with an empty cache; the run's next workflow
  // task attempt replays it from its history there. The refunds and webhooks workers are recreated
  // with it: one connection and one read model serve the three.
  for (;;) {
    const restart = new Promise<'restart'>((resolve) => (wedged = () => resolve('restart')));
    const outcome = await Promise.race([running.done.then(() => 'done' as const), restart]);
    wedged = undefined;
    if (outcome === 'done' || stopping) break;
    await running.shutdown().catch((err: Error) => logger.warn({ err: err.message }, 'wedged worker forced to stop'));
    if (stopping) break;
    running = await start();
    ledger = new RefundLedger(running.database);
    lifecycle.info({ taskQueue: config.temporal.taskQueue, version: running.version }, 'worker recreated after a wedged run');
  }
  await running.done.catch(() => undefined);
  await metricsServer?.close();
  await tracing?.shutdown().catch((err: Error) => logger.warn({ err: err.message }, 'spans not exported at shutdown'));
  lifecycle.info('worker stopped');
}

main().catch((err) => exitOnFailure('worker', 'worker failed', processLogger, err));
