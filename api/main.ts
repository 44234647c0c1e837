import type { Logger } from 'pino';
import { loadConfigOf, type ApiConfig } from '../config/config';
import { createLogger, exitAfterFlush, exitOnFailure, lifecycleLogger } from '../config/logger';
import { secretsOf } from '../config/secrets';
import { redactor } from '../lib/redact';
import { startTracing } from '../lib/tracing';
import { startApi } from './server';
import { sharedReadModel } from '../config/read-model-check';

/** The process's logger, once main has read the config that sets its level. */
let processLogger: Logger | undefined;

/** `npm run api`: the HTTP API against TEMPORAL_ADDRESS and STORAGE_NODES. */
async function main() {
  const config: ApiConfig = loadConfigOf('api');
  const graceMs = config.shutdownGraceMs;
  const secrets = secretsOf(config);
  const logger = createLogger('api', config.logLevel, undefined, secrets);
  processLogger = logger;
  const tracing = await startTracing(
    config.tracing,
    'api',
    (err, failures) => logger.warn({ err, failures, url: config.tracing?.url }, 'spans not exported'),
    redactor(secrets),
  );
  const lifecycle = lifecycleLogger(logger);
  const storageNodes = config.storageNodes ?? [];
  if (storageNodes.length === 0) logger.warn('STORAGE_NODES is empty: whitelist batches will fail');
  const temporalAddress = config.temporal.address ?? '127.0.0.1:7233';
  if (!(await sharedReadModel(config, temporalAddress, logger))) return exitAfterFlush(logger, 1);
  const api = await startApi(config, { temporalAddress, storageNodes, logger });
  lifecycle.info({ url: api.url, operatorUrl: api.operatorUrl }, 'api listening');
  let stopping = false;
  const stop = async (signal: NodeJS.Signals) => {
    // A second signal while draining changes nothing: the grace period already bounds the wait.
    if (stopping) return;
    stopping = true;
    lifecycle.info({ signal, graceMs }, 'api shutting down: no new connections, finishing in-flight requests');
    const cut = await api.close(graceMs);
    if (cut > 0) logger.warn({ cut }, 'requests cut at the end of the grace period (their workflows carry on)');
    await tracing?.shutdown().catch((err: Error) => logger.warn({ err: err.message }, 'spans not exported at shutdown'));
    lifecycle.info('api stopped');
    exitAfterFlush(logger, 0);
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => void stop(signal));
}

main().catch((err) => exitOnFailure('api', 'api failed to start', processLogger, err));
