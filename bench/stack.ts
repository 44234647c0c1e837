import { freePort } from '../config/free-port';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { projectRoot } from '../config/config';
import { launchStack, type LaunchedStack, type TemporalChoice } from '../scripts/lib/stack/launch-stack';
import { STACK_SERVICE_SETTINGS } from '../scripts/lib/stack/stack-settings';
import { readDevServerSettings } from '../scripts/lib/temporal-dev-server';
import { startThrowawayCluster, type ThrowawayCluster } from '../scripts/lib/cluster/throwaway-cluster';
import { readNodeKeysFile } from '../lib/node-keys-file';
import type { NodeKeys } from '../lib/node-request-auth';
import { createToken } from '../tokens/token-store';
import { startNodeChild, track, type BenchChild } from './children';
import { childEnv } from '../config/child-env';
import type { DatabaseSettings } from '../db/database';

/**
 * The whole service as separate processes, as `npm start` runs it: a Temporal dev server (the
 * cached CLI binary, headless, SQLite file in a temp folder), three storage nodes, worker(s) and
 * the API, each `node dist/...` with its own pid so that its memory can be read.
 */
export interface BenchStack {
  tmpDir: string;
  temporalAddress: string;
  taskQueue: string;
  /** Task queue of the floor worker (bench/floor: a workflow that does nothing). */
  floorTaskQueue: string;
  apiUrl: string;
  /** A second API on the same workers, with one copy of each entry (STORAGE_REPLICAS=1): the batches' N=1 side. */
  apiOneCopyUrl: string;
  nodes: string[];
  /** The storage nodes' keys: the direct side signs its requests as the worker does. */
  nodeKeys: NodeKeys;
  /** The service's read model (the stack's own SQLite file, or the cluster's PostgreSQL database). */
  readModel: DatabaseSettings;
  /** Every scope: executions:prepare, executions:deposit, whitelist:*. */
  token: string;
  api: BenchChild;
  workers: BenchChild[];
  /** The floor worker (bench/floor): the reference workflows' only worker. */
  floorWorker: BenchChild;
  /**
   * The Temporal server's process, for its CPU time: the dev server (its SQLite in-process), or the
   * cluster's server (without PostgreSQL's processes).
   */
  serverPid?: number;
  /** The last `lines` lines of the API's and each worker's log (for a failed run: logs go with the temp folder). */
  logTails(lines: number): string;
  /** Starts one more worker process on the same task queue. */
  addWorker(): Promise<BenchChild>;
  stop(): Promise<void>;
}

export interface StackOptions {
  /** `dev` (default): a dev server on SQLite; `cluster`: the production topology's server on PostgreSQL. */
  temporal?: 'dev' | 'cluster';
  /** Extra node flags for the API and worker processes (e.g. --cpu-prof). */
  nodeArgs?: string[];
  /** Dev server dynamic config on top of temporal-dev.yaml's (to try a server setting). */
  dynamicConfig?: Record<string, unknown>;
  /** Service settings for the API and the workers on top of the bench's (to compare one setting). */
  env?: Record<string, string>;
  /** Settings of the storage nodes' processes (they read only OTEL_*). */
  nodeEnv?: Record<string, string>;
  log?: (line: string) => void;
  /**
   * The project whose built `dist/` the API, the workers and the storage nodes run from (default:
   * this one): another commit's build, to measure this one against it on the same stack.
   */
  serviceRoot?: string;
  /**
   * The sticky caches' sizes: the service's workers' (WORKER_CACHED_WORKFLOWS) and the floor
   * worker's. A run the cache evicted replays its whole history at its next task, which admission
   * never lets happen in production (docs/decisions/0082): a case sizes them to hold every run it
   * keeps open. Default: the service's default, the SDK's for the floor worker.
   */
  cachedWorkflows?: { service: number; floor: number };
}

export async function startBenchStack(options: StackOptions = {}): Promise<BenchStack> {
  const log = options.log ?? (() => undefined);
  const tmpDir = mkdtempSync(path.join(os.tmpdir(), 'intent-service-bench-'));
  const logDir = path.join(tmpDir, 'logs');
  mkdirSync(logDir);
  let throwaway: ThrowawayCluster | undefined;
  let launched: LaunchedStack<BenchChild> | undefined;
  // The launcher's order: the API first, then the workers, so that in-flight requests still get
  // their answers; then the floor worker, the nodes, Temporal (and a throwaway cluster last).
  const stop = async () => {
    await launched?.stop();
    await throwaway?.stop().catch(() => undefined);
    rmSync(tmpDir, { recursive: true, force: true });
  };
  try {
    // The service's read model: its own SQLite file beside the dev server, the cluster's database on PostgreSQL.
    let temporal: TemporalChoice;
    let namespace: string;
    let database: Record<string, string>;
    let readModel: DatabaseSettings;
    if (options.temporal === 'cluster') {
      throwaway = await startThrowawayCluster('bench cluster');
      const { cluster } = throwaway;
      temporal = { address: cluster.address };
      namespace = cluster.settings.temporal.namespace;
      database = { DATABASE_URL: cluster.databaseUrl };
      readModel = { url: cluster.databaseUrl, sqliteFile: '' };
      log(
        `temporal cluster ${cluster.address} (server pid ${cluster.server.child.pid}, PostgreSQL, ${cluster.settings.temporal.historyShards} shards)`,
      );
    } else {
      const shipped = readDevServerSettings();
      temporal = {
        devServer: {
          headless: true,
          dbFilename: path.join(tmpDir, 'temporal.sqlite'),
          logLevel: 'error',
          dynamicConfig: { ...shipped.dynamicConfig, ...options.dynamicConfig },
        },
      };
      namespace = shipped.namespace;
      database = { DATABASE_FILE: path.join(tmpDir, 'read-model.sqlite') };
      readModel = { sqliteFile: database.DATABASE_FILE };
    }

    const keysFile = path.join(tmpDir, 'storage-node-keys');
    const tokensFile = path.join(tmpDir, 'tokens.json');
    const token = createToken(tokensFile, 'bench', ['executions:prepare', 'executions:deposit', 'whitelist:*']);
    const taskQueue = `bench-${process.pid}`;
    const apiPort = await freePort();
    const apiOneCopyPort = await freePort();
    launched = await launchStack<BenchChild>({
      temporal,
      nodes: {
        nodes: [1, 2, 3].map((i) => ({ port: 0, dataDir: path.join(tmpDir, `node-${i}`) })),
        keysFile,
        createKeysFile: true,
        name: (i) => `node-${i + 1}`,
        echo: false,
        ...(options.nodeEnv ? { env: childEnv(options.nodeEnv) } : {}),
      },
      service: {
        env: {
          TEMPORAL_NAMESPACE: namespace,
          ...database,
          TEMPORAL_TASK_QUEUE: taskQueue,
          API_TOKENS_FILE: tokensFile,
          PORT: String(apiPort),
          HOST: '127.0.0.1',
          ...STACK_SERVICE_SETTINGS,
          // Each worker's metrics endpoint (ours and Temporal Core's) on a free port of its own.
          WORKER_METRICS_PORT: '0',
          OPERATOR_PORT: '0',
          ...(options.cachedWorkflows ? { WORKER_CACHED_WORKFLOWS: String(options.cachedWorkflows.service) } : {}),
          ...options.env,
        },
        workers: [{}],
        // The workflow takes each change's replicas from the API that starts it: one worker serves both.
        apis: [{ port: apiPort }, { port: apiOneCopyPort, env: { PORT: String(apiOneCopyPort), STORAGE_REPLICAS: '1' } }],
        apiName: (i) => (i === 0 ? 'api' : 'api-one-copy'),
        ...(options.nodeArgs ? { nodeArgs: options.nodeArgs } : {}),
        ...(options.serviceRoot ? { serviceRoot: options.serviceRoot } : {}),
        // Each process logs to a file of its own (never to a pipe that could fill up).
        start: (spec) =>
          startNodeChild(spec.name, spec.script, {
            env: spec.env,
            logFile: path.join(logDir, `${spec.name}.log`),
            readyPattern: spec.readyPattern,
            nodeArgs: [...spec.nodeArgs],
          }),
      },
      graceMs: { services: 15_000, nodes: 2000, temporal: 5000 },
    });
    const stack = launched;
    if (stack.temporal.child) {
      track(stack.temporal.child);
      log(`temporal dev server ${stack.temporal.address} (pid ${stack.temporal.child.pid})`);
    }
    for (const n of stack.nodes) track(n.child);
    const nodes = stack.nodeUrls();
    log(`storage nodes ${nodes.join(' ')}`);
    const workers = stack.workers;
    log(`worker-1 (pid ${workers[0].pid})`);

    const addWorker = async () => {
      const worker = await stack.startWorker(workers.length);
      log(`${worker.name} (pid ${worker.pid})`);
      return worker;
    };
    const floorTaskQueue = `${taskQueue}-floor`;
    // The floor worker is always this project's (bench/floor: a workflow that does nothing).
    const floor = await stack.startService(
      'floor-worker',
      path.join(projectRoot, 'dist', 'bench', 'floor', 'worker.js'),
      /floor worker polling task queue/,
      {
        FLOOR_TASK_QUEUE: floorTaskQueue,
        ...(options.cachedWorkflows ? { FLOOR_CACHED_WORKFLOWS: String(options.cachedWorkflows.floor) } : {}),
      },
    );
    log(`floor worker (pid ${floor.pid})`);
    const api = stack.apis[0];
    const apiUrl = `http://127.0.0.1:${apiPort}`;
    log(`api ${apiUrl} (pid ${api.pid})`);
    const logTails = (lines: number) =>
      [api, ...workers]
        .map((c) => `--- ${c.name} (${c.logFile}) ---\n${readFileSync(c.logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n')}`)
        .join('\n');
    return {
      tmpDir,
      temporalAddress: stack.temporal.address,
      taskQueue,
      floorTaskQueue,
      apiUrl,
      apiOneCopyUrl: `http://127.0.0.1:${apiOneCopyPort}`,
      nodes,
      nodeKeys: readNodeKeysFile(keysFile),
      readModel,
      token,
      api,
      workers,
      floorWorker: floor,
      serverPid: stack.temporal.child?.pid ?? throwaway?.cluster.server.child.pid,
      logTails,
      addWorker,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
