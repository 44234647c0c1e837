import path from 'node:path';
import { loadConfig, projectRoot } from '../config/config';
import { childEnv } from '../config/settings';
import { startChildService, type ChildService } from './lib/child-service';
import { createNodeKeysFile } from '../lib/node-keys-file';
import { startStorageNode } from './lib/storage-nodes';
import { temporalBinary } from './lib/temporal-binary';
import { readDevServerSettings, startDevServer, type RunningDevServer } from './lib/temporal-dev-server';
import { SERVICE_PROCESS_ENV, WORKER_NODE_ARGS, WORKER_PROCESS_ENV } from './lib/service-env';

const LOCAL_NODE_PORTS = [4101, 4102, 4103];

/**
 * `npm start`: the whole service on one machine, with embedded defaults. Starts (each only when
 * not configured to use an existing one) the Temporal dev server, three storage nodes, then the
 * worker and the API, waits for each, prints the URLs, and on Ctrl-C / SIGTERM stops them in
 * reverse order. If any part dies, everything is stopped and the exit code is 1.
 */
async function main() {
  const config = loadConfig();
  const parts: Array<{ name: string; stop: () => Promise<void>; exited: Promise<unknown> }> = [];
  let stopping = false;

  const stopAll = async (code: number) => {
    if (stopping) return;
    stopping = true;
    for (const part of [...parts].reverse()) {
      process.stdout.write(`[start] stopping ${part.name}\n`);
      await part.stop().catch(() => undefined);
    }
    process.stdout.write('[start] all stopped\n');
    process.exit(code);
  };
  const watch = (name: string, exited: Promise<unknown>, stop: () => Promise<void>) => {
    parts.push({ name, stop, exited });
    void exited.then((code) => {
      if (stopping) return;
      process.stderr.write(`[start] ${name} exited unexpectedly (${code}); stopping everything\n`);
      void stopAll(1);
    });
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => void stopAll(0));

  try {
    let temporalAddress = config.temporal.address;
    let uiUrl: string | undefined;
    if (!temporalAddress) {
      const settings = readDevServerSettings();
      process.stdout.write(
        `[start] starting Temporal dev server on ${settings.ip}:${settings.port} (database ${settings.dbFilename ?? 'in memory'})\n`,
      );
      const dev: RunningDevServer = await startDevServer(temporalBinary(), settings);
      watch('temporal', new Promise((r) => dev.child.once('exit', r)), () => dev.stop());
      temporalAddress = dev.address;
      uiUrl = dev.uiUrl;
    }

    let storageNodes = config.storageNodes;
    const keysFile = config.storageNodeKeysFile;
    if (!storageNodes) {
      // The nodes are ours: so is their key. Nodes configured elsewhere come with their own keys file.
      if (createNodeKeysFile(keysFile)) process.stdout.write(`[start] created the storage node keys file ${keysFile}\n`);
      const nodes = await Promise.all(
        LOCAL_NODE_PORTS.map((port, i) =>
          startStorageNode(`storage-node-${i + 1}`, { port, dataDir: path.join(projectRoot, 'data', `storage-node-${i + 1}`), keysFile }),
        ),
      );
      for (const node of nodes) watch(node.name, node.exited, () => node.stop());
      storageNodes = nodes.map((n) => n.url);
    }

    const env = childEnv(
      { TEMPORAL_ADDRESS: temporalAddress, STORAGE_NODES: storageNodes.join(','), STORAGE_NODE_KEYS_FILE: keysFile },
      SERVICE_PROCESS_ENV,
    );
    const node = (
      name: string,
      script: string,
      readyPattern: RegExp,
      nodeArgs: readonly string[] = [],
      extraEnv: Readonly<Record<string, string>> = {},
    ): ChildService => {
      const service = startChildService(name, process.execPath, [...nodeArgs, path.join(projectRoot, 'dist', script)], {
        readyPattern,
        env: { ...extraEnv, ...env },
      });
      watch(name, service.exited, () => service.stop(15_000));
      return service;
    };
    const worker = node('worker', 'worker/main.js', /worker polling task queue/, WORKER_NODE_ARGS, WORKER_PROCESS_ENV);
    const workerVersion = versionOf((await worker.ready).input);
    const api = node('api', 'api/main.js', /"msg":"api listening"/);
    await api.ready;

    const apiUrl = `http://${config.host}:${config.port}`;
    process.stdout.write(
      [
        '',
        'intent-service is up',
        `  API           ${apiUrl}   (try: curl ${apiUrl}/healthz)`,
        config.operator
          ? `  operator      http://${config.operator.host}:${config.operator.port}/metrics and /readyz`
          : '  operator      (off)',
        `  Temporal      ${temporalAddress}   namespace ${config.temporal.namespace}, task queue ${config.temporal.taskQueue}`,
        uiUrl ? `  Temporal UI   ${uiUrl}` : '  Temporal UI   (external cluster)',
        workerVersion
          ? `  worker        version ${workerVersion.deploymentName} ${workerVersion.buildId}${config.workerDeployment?.promote === 'current' ? ', current' : ', to be made current (WORKER_PROMOTE=none)'}   (rollouts: docs/operations.md)`
          : '  worker        unversioned (WORKER_VERSIONING=off)',
        `  storage nodes ${storageNodes.join(' ')}`,
        `  node keys     ${keysFile}`,
        `  tokens        ${config.apiTokensFile}   (npm run --silent token -- create --id NAME --scope SCOPE)`,
        'Ctrl-C stops everything.',
        '',
      ].join('\n'),
    );
  } catch (err) {
    process.stderr.write(`[start] failed: ${(err as Error).message}\n`);
    await stopAll(1);
  }
}

/** The Worker Deployment version in the worker's ready line (a JSON log line), if it has one. */
function versionOf(line: string): { deploymentName: string; buildId: string } | undefined {
  try {
    return (JSON.parse(line) as { version?: { deploymentName: string; buildId: string } }).version;
  } catch {
    return undefined;
  }
}

void main();
