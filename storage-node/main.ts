/**
 * Storage node entry point: `node dist/storage-node/main.js --port P --data DIR --keys-file FILE [--host H]`.
 * Prints exactly one stdout line once listening (launchers parse the port from it); everything
 * else goes to stderr.
 */
import { readFileSync } from 'node:fs';
import { parseStorageNodeArgs, USAGE, type StorageNodeConfig } from './config';
import { readNodeKeysFile } from '../lib/node-keys-file';
import { startTracing, type Tracing } from '../lib/tracing';
import { envSettings } from '../config/read-settings';
import { tracingConfigOf } from '../config/tracing';
import { createStorageNodeServer, type StorageNodeOptions, type StorageNodeServer } from './server';

/** Give up on a graceful close after this long, so a stuck close cannot block a shutdown. */
const CLOSE_DEADLINE_MS = 5_000;

function shutdownOn(node: StorageNodeServer, tracing: Tracing | undefined): void {
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    setTimeout(() => process.exit(0), CLOSE_DEADLINE_MS).unref();
    const spans = tracing?.shutdown().catch((err: Error) => console.error(`storage-node: spans not exported at shutdown: ${err.message}`));
    Promise.all([node.close(), spans]).then(
      () => process.exit(0),
      (err: Error) => {
        console.error(`storage-node: close failed: ${err.message}`);
        process.exit(0);
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
  let config;
  try {
    config = parseStorageNodeArgs(argv);
  } catch (err) {
    console.error(`storage-node: ${(err as Error).message}\n${usage}`);
    process.exit(2);
  }
  // Tracing from the OTEL_* variables (the only settings a node reads from its environment).
  let tracing: Tracing | undefined;
  try {
    const tracingConfig = tracingConfigOf(envSettings());
    tracing = await startTracing(tracingConfig, 'storage-node', (err, failures) =>
      console.error(`storage-node: ${failures} span export(s) to ${tracingConfig?.url} failed (last: ${err})`),
    );
  } catch (err) {
    console.error(`storage-node: ${(err as Error).message}`);
    process.exit(2);
  }
  // The files are read here, once: a missing or bad one stops the start with its path.
  const node = createStorageNodeServer({
    ...config,
    ...extra,
    keys: readNodeKeysFile(config.keysFile),
    tls: readTls(config.tls),
    traced: tracing !== undefined,
  });
  shutdownOn(node, tracing);
  const { url } = await node.listen(config.port, config.host);
  console.log(`storage-node listening on ${url}`);
}

/** Ends a failed start with its reason. */
export function failedStart(err: Error): never {
  console.error(`storage-node: failed to start: ${err.message}`);
  process.exit(1);
}

if (require.main === module) runStorageNode(process.argv.slice(2)).catch(failedStart);
