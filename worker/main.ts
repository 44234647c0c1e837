import type { LogLevel } from '@temporalio/worker';
import { loadConfig } from '../config/config';
import { createLogger, lifecycleLogger } from '../config/logger';
import { startWorker } from './create-worker';
import { createWorkerMetrics } from './metrics';
import { startMetricsServer, type MetricsServer } from './metrics-server';
import { installRuntime } from './runtime';

/** `npm run worker`: one worker against TEMPORAL_ADDRESS (default 127.0.0.1:7233), with its metrics endpoint. */
async function main() {
  const config = loadConfig();
  const logger = createLogger('worker', config.logLevel);
  const lifecycle = lifecycleLogger(logger);
  const port = config.workerMetricsPort;
  const sdkLevel: LogLevel = config.sdkLogLevel;
  // The SDK's own log (bundler statistics, state changes) at WARN unless asked: SDK_LOG_LEVEL=INFO.
  const { sdkMetricsUrl } = await installRuntime(logger, sdkLevel);

  const metrics = createWorkerMetrics();
  let metricsServer: MetricsServer | undefined;
  if (port !== undefined) {
    // A busy port costs the metrics, not the worker: executions matter more than their counters.
    metricsServer = await startMetricsServer({ host: config.host, port, registry: metrics.registry, sdkMetricsUrl }).catch((err) => {
      logger.warn({ port, reason: (err as Error).message }, 'worker metrics endpoint not started');
      return undefined;
    });
    if (metricsServer) lifecycle.info({ url: metricsServer.url }, 'worker metrics listening');
  }

  const address = config.temporal.address ?? '127.0.0.1:7233';
  const running = await startWorker(
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
      onReadModelDown: (err) => logger.error({ err: err.message }, 'read model unavailable; its writes wait until it is back'),
      onChainEvent: metrics.recordChainEvent,
      onChainWatcherError: (err) => logger.error({ err: err.message }, 'chain watcher not started; trying again in 5 s'),
    },
  );
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
    { taskQueue: config.temporal.taskQueue, address, namespace: config.temporal.namespace, version: running.version },
    `worker polling task queue ${config.temporal.taskQueue}`,
  );
  void running.chainWatcher.then((workflowId) => {
    if (workflowId) lifecycle.info({ workflowId, rpcUrl: config.chain?.rpcUrl }, `chain watcher ${workflowId} running`);
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      lifecycle.info({ signal }, 'worker draining');
      void running.shutdown();
    });
  }
  await running.done;
  await metricsServer?.close();
  lifecycle.info('worker stopped');
}

main().catch((err) => {
  console.error('worker failed:', err);
  process.exit(1);
});
