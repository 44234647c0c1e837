import { DefaultLogger, Runtime, type LogLevel } from '@temporalio/worker';
import { loadConfig } from '../config/config';
import { startWorker } from './create-worker';

/** `npm run worker`: one worker against TEMPORAL_ADDRESS (default 127.0.0.1:7233). */
async function main() {
  const config = loadConfig();
  // The SDK's own log (bundler statistics, state changes) at WARN unless asked: SDK_LOG_LEVEL=INFO.
  Runtime.install({ logger: new DefaultLogger((process.env.SDK_LOG_LEVEL?.toUpperCase() as LogLevel) || 'WARN') });
  const address = config.temporal.address ?? '127.0.0.1:7233';
  const running = await startWorker(config, address);
  console.log(`worker polling task queue ${config.temporal.taskQueue} on ${address} (namespace ${config.temporal.namespace})`);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      console.log(`worker: ${signal}, draining`);
      void running.shutdown();
    });
  }
  await running.done;
  console.log('worker stopped');
}

main().catch((err) => {
  console.error('worker failed:', err);
  process.exit(1);
});
