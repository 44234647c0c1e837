import { loadConfig } from '../config/config';
import { createLogger } from '../config/logger';
import { startApi } from './server';

/** `npm run api`: the HTTP API against TEMPORAL_ADDRESS and STORAGE_NODES. */
async function main() {
  const config = loadConfig();
  const logger = createLogger('api');
  const storageNodes = config.storageNodes ?? [];
  if (storageNodes.length === 0) logger.warn('STORAGE_NODES is empty: whitelist batches will fail');
  const api = await startApi(config, { temporalAddress: config.temporal.address ?? '127.0.0.1:7233', storageNodes, logger });
  logger.info({ url: api.url }, 'api listening');
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, async () => {
      logger.info({ signal }, 'api shutting down');
      await api.close();
      process.exit(0);
    });
  }
}

main().catch((err) => {
  console.error('api failed to start:', err);
  process.exit(1);
});
