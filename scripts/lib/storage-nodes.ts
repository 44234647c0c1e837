import path from 'node:path';
import { projectRoot } from '../../config/config';
import { startChildService, type ChildService } from './child-service';

/** The ports of the three storage nodes `npm start` runs. */
export const LOCAL_NODE_PORTS = [4101, 4102, 4103] as const;

export interface StorageNodeProcess extends ChildService {
  readonly url: string;
}

/**
 * Starts one storage node process (`node dist/storage-node/main.js`) and waits until it listens.
 * `port` 0 picks a free port; `keysFile` is the deployment's keys file (the node accepts only
 * requests signed with them); `script` is another entry point of the node (the tests' build
 * with faults, test/support/faulty-storage-node.ts), `extraArgs` its flags.
 */
export async function startStorageNode(
  name: string,
  options: {
    port: number;
    dataDir: string;
    keysFile: string;
    echo?: boolean;
    script?: string;
    extraArgs?: string[];
    /** The node's environment (default: this process's); a node reads only LOG_LEVEL and the OTEL_* variables from it. */
    env?: NodeJS.ProcessEnv;
  },
): Promise<StorageNodeProcess> {
  const script = options.script ?? path.join(projectRoot, 'dist', 'storage-node', 'main.js');
  const service = startChildService(
    name,
    process.execPath,
    [script, '--port', String(options.port), '--data', options.dataDir, '--keys-file', options.keysFile, ...(options.extraArgs ?? [])],
    {
      // The node's log line (pino's JSON) whose message is contracts' LISTENING_MSG.
      readyPattern: /"msg":"storage-node listening on (https?:\/\/[^"\s]+)"/,
      echo: options.echo,
      ...(options.env ? { env: options.env } : {}),
      readyTimeoutMs: 20_000,
    },
  );
  const match = await service.ready;
  return Object.assign(service, { url: match[1] });
}
