/**
 * Storage node entry point: `node dist/storage-node/main.js --port P --data DIR --keys-file FILE [--host H]`.
 * Prints exactly one stdout line once listening (launchers parse the port from it); everything
 * else goes to stderr.
 */
import { readFileSync } from 'node:fs';
import { parseStorageNodeArgs, USAGE, type StorageNodeConfig } from './config';
import { readNodeKeysFile } from '../lib/node-keys-file';
import { createStorageNodeServer, type StorageNodeServer } from './server';

/** Give up on a graceful close after this long, so a stuck close cannot block a shutdown. */
const CLOSE_DEADLINE_MS = 5_000;

function shutdownOn(node: StorageNodeServer): void {
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    setTimeout(() => process.exit(0), CLOSE_DEADLINE_MS).unref();
    node.close().then(
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

async function main(): Promise<void> {
  let config;
  try {
    config = parseStorageNodeArgs(process.argv.slice(2));
  } catch (err) {
    console.error(`storage-node: ${(err as Error).message}\n${USAGE}`);
    process.exit(2);
  }
  // The files are read here, once: a missing or bad one stops the start with its path.
  const node = createStorageNodeServer({ ...config, keys: readNodeKeysFile(config.keysFile), tls: readTls(config.tls) });
  shutdownOn(node);
  const { url } = await node.listen(config.port, config.host);
  console.log(`storage-node listening on ${url}`);
}

main().catch((err: Error) => {
  console.error(`storage-node: failed to start: ${err.message}`);
  process.exit(1);
});
