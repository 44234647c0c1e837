/**
 * Storage node entry point: `node dist/storage-node/main.js --port P --data DIR --keys-file FILE [--host H]`.
 * Every line it writes is pino's JSON on stdout, at LOG_LEVEL, like the API's and the worker's;
 * once listening, whatever the level, the line `storage-node listening on URL` (launchers take the
 * URL from it: contracts/storage-node-protocol.ts `listeningUrl`).
 */
import { readFileSync } from 'node:fs';
import { parseStorageNodeArgs, USAGE, type StorageNodeConfig } from './config';
import { readNodeKeysFile } from '../lib/node-keys-file';
import { startTracing, type Tracing } from '../lib/tracing';
import type { Logger } from 'pino';
import { envSettings } from '../config/read-settings';
import { createLogger, exitAfterFlush, exitOnFailure, lifecycleLogger } from '../config/logger';
import { SETTINGS, type Settings } from '../config/settings';
import { tracingConfigOf } from '../config/tracing';
import { createStorageNodeServer, type StorageNodeOptions, type StorageNodeServer } from './server';

/** Give up on a graceful close after this long, so a stuck close cannot block a shutdown. */
const CLOSE_DEADLINE_MS = 5_000;

function shutdownOn(node: StorageNodeServer, tracing: Tracing | undefined, logger: Logger): void {
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    setTimeout(() => process.exit(0), CLOSE_DEADLINE_MS).unref();
    const spans = tracing?.shutdown().catch((err: Error) => logger.warn({ err: err.message }, 'spans not exported at shutdown'));
    Promise.all([node.close(), spans]).then(
      () => exitAfterFlush(logger, 0),
      (err: Error) => {
        logger.error({ err: err.message }, 'close failed');
        exitAfterFlush(logger, 0);
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

function readTls(files: StorageNodeConfig['tls']): { cert: Buffer; key: Buffer } | undefined {
  if (!files) return undefined;
  const read = (flag: string, file: string) => {
    try {
      return readFileSync(file);
    } catch (err) {
      throw new Error(`cannot read ${flag} ${file}: ${(err as Error).message}`);
    }
  };
  return { cert: read('--tls-cert', files.certFile), key: read('--tls-key', files.keyFile) };
}

/**
 * Runs a node process from its command line; `extra` adds what a test build of the node brings
 * (test/support/faulty-storage-node.ts), `usage` its flags.
 */
export async function runStorageNode(
  argv: string[],
  extra: Pick<StorageNodeOptions, 'answerApply' | 'extraRoute'> = {},
  usage = USAGE,
): Promise<void> {
  // LOG_LEVEL and the OTEL_* variables: the only settings a node reads from its environment.
  let settings: Settings;
  try {
    settings = envSettings();
  } catch (err) {
    return refuseStart(createLogger('storage-node', 'info'), (err as Error).message);
  }
  const logger = createLogger('storage-node', settings.LOG_LEVEL ?? SETTINGS.LOG_LEVEL.default);
  processLogger = logger;
  let config;
  try {
    config = parseStorageNodeArgs(argv);
  } catch (err) {
    return refuseStart(logger, `${(err as Error).message}\n${usage}`);
  }
  let tracing: Tracing | undefined;
  try {
    const tracingConfig = tracingConfigOf(settings);
    tracing = await startTracing(tracingConfig, 'storage-node', (err, failures) =>
      logger.warn({ err, failures, url: tracingConfig?.url }, 'spans not exported'),
    );
  } catch (err) {
    return refuseStart(logger, (err as Error).message);
  }
  // The files are read here, once: a missing or bad one stops the start with its path.
  const node = createStorageNodeServer({
    ...config,
    ...extra,
    keys: readNodeKeysFile(config.keysFile),
    tls: readTls(config.tls),
    traced: tracing !== undefined,
    logger,
  });
  shutdownOn(node, tracing, logger);
  const { url } = await node.listen(config.port, config.host);
  lifecycleLogger(logger).info({ url }, `storage-node listening on ${url}`);
}

/** The process's logger, once runStorageNode has read the LOG_LEVEL that sets its level. */
let processLogger: Logger | undefined;

/** Ends a start refused for its arguments or settings: the reason (with the usage when it is the arguments'), exit 2. */
export function refuseStart(logger: Logger, reason: string): void {
  logger.fatal(reason);
  exitAfterFlush(logger, 2);
}

/** Ends a failed start with its reason. */
export function failedStart(err: Error): void {
  exitOnFailure('storage-node', 'failed to start', processLogger, err);
}

if (require.main === module) runStorageNode(process.argv.slice(2)).catch(failedStart);
