import path from 'node:path';
import { projectRoot } from '../../config/config';
import { startChildService, type ChildService } from './child-service';

export interface StorageNodeProcess extends ChildService {
  readonly url: string;
}

/**
 * Starts one storage node process (`node dist/storage-node/main.js`) and waits until it listens.
 * `port` 0 picks a free port; `extraArgs` carries the fault flags tests use.
 */
export async function startStorageNode(
  name: string,
  options: { port: number; dataDir: string; echo?: boolean; extraArgs?: string[] },
): Promise<StorageNodeProcess> {
  const script = path.join(projectRoot, 'dist', 'storage-node', 'main.js');
  const service = startChildService(
    name,
    process.execPath,
    [script, '--port', String(options.port), '--data', options.dataDir, ...(options.extraArgs ?? [])],
    {
      readyPattern: /storage-node listening on (http:\/\/\S+)/,
      echo: options.echo,
      readyTimeoutMs: 20_000,
    },
  );
  const match = await service.ready;
  return Object.assign(service, { url: match[1] });
}
