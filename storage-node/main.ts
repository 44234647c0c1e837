/**
 * Storage node entry point: `node dist/storage-node/main.js --port P --data DIR [--host H]`.
 * Prints exactly one stdout line once listening (launchers parse the port from it); everything
 * else goes to stderr.
 */
import { parseStorageNodeArgs, USAGE } from './config';
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

async function main(): Promise<void> {
  let config;
  try {
    config = parseStorageNodeArgs(process.argv.slice(2));
  } catch (err) {
    console.error(`storage-node: ${(err as Error).message}\n${USAGE}`);
    process.exit(2);
  }
  const node = createStorageNodeServer(config);
  const { recovery } = node;
  if (recovery.tornBytes > 0) console.error(`storage-node: cut a torn last log line (${recovery.tornBytes} bytes)`);
  shutdownOn(node);
  const { url } = await node.listen(config.port, config.host);
  console.log(`storage-node listening on ${url}`);
}

main().catch((err: Error) => {
  console.error(`storage-node: failed to start: ${err.message}`);
  process.exit(1);
});
