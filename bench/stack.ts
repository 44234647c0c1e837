import { freePort } from '../config/free-port';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { projectRoot } from '../config/config';
import { SERVICE_PROCESS_ENV, WORKER_NODE_ARGS, WORKER_PROCESS_ENV } from '../scripts/lib/service-env';
import { startStorageNode, type StorageNodeProcess } from '../scripts/lib/storage-nodes';
import { temporalBinary } from '../scripts/lib/temporal-binary';
import { readDevServerSettings, startDevServer, type RunningDevServer } from '../scripts/lib/temporal-dev-server';
import { startThrowawayCluster } from '../scripts/lib/cluster/throwaway-cluster';
import { createNodeKeysFile, readNodeKeysFile } from '../lib/node-keys-file';
import type { NodeKeys } from '../lib/node-request-auth';
import { createToken } from '../tokens/token-store';
import { startNodeChild, track, type BenchChild } from './children';
import { childEnv } from '../config/child-env';

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
  nodes: string[];
  /** The storage nodes' keys: the direct side signs its requests as the worker does. */
  nodeKeys: NodeKeys;
  /** Every scope: executions:prepare, executions:deposit, whitelist:*. */
  token: string;
  api: BenchChild;
  workers: BenchChild[];
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
}

export async function startBenchStack(options: StackOptions = {}): Promise<BenchStack> {
  const log = options.log ?? (() => undefined);
  const tmpDir = mkdtempSync(path.join(os.tmpdir(), 'intent-service-bench-'));
  // Stopped in reverse order of start, except that the API goes first and then the workers, so
  // that in-flight requests still get their answers.
  const stoppers: Array<() => Promise<void>> = [];
  let api: BenchChild | undefined;
  const workers: BenchChild[] = [];
  const stop = async () => {
    await api?.stop(15_000).catch(() => undefined);
    await Promise.all(workers.map((w) => w.stop(15_000).catch(() => undefined)));
    for (const s of stoppers.splice(0).reverse()) await s().catch(() => undefined);
    rmSync(tmpDir, { recursive: true, force: true });
  };
  try {
    // The service's read model: its own SQLite file beside the dev server, the cluster's database on PostgreSQL.
    let temporal: { address: string; namespace: string; database: Record<string, string> };
    if (options.temporal === 'cluster') {
      const throwaway = await startThrowawayCluster('bench cluster');
      stoppers.push(() => throwaway.stop());
      const { cluster } = throwaway;
      temporal = {
        address: cluster.address,
        namespace: cluster.settings.temporal.namespace,
        database: { DATABASE_URL: cluster.databaseUrl },
      };
      log(
        `temporal cluster ${cluster.address} (server pid ${cluster.server.child.pid}, PostgreSQL, ${cluster.settings.temporal.historyShards} shards)`,
      );
    } else {
      const shipped = readDevServerSettings();
      const settings = readDevServerSettings({
        port: await freePort(),
        headless: true,
        dbFilename: path.join(tmpDir, 'temporal.sqlite'),
        logLevel: 'error',
        dynamicConfig: { ...shipped.dynamicConfig, ...options.dynamicConfig },
      });
      const dev: RunningDevServer = await startDevServer(temporalBinary(), settings);
      track(dev.child);
      stoppers.push(() => dev.stop(5000));
      temporal = {
        address: dev.address,
        namespace: settings.namespace,
        database: { DATABASE_FILE: path.join(tmpDir, 'read-model.sqlite') },
      };
      log(`temporal dev server ${dev.address} (pid ${dev.child.pid})`);
    }

    const keysFile = path.join(tmpDir, 'storage-node-keys');
    createNodeKeysFile(keysFile);
    const nodeProcs: StorageNodeProcess[] = await Promise.all(
      [1, 2, 3].map((i) =>
        startStorageNode(`node-${i}`, {
          port: 0,
          dataDir: path.join(tmpDir, `node-${i}`),
          keysFile,
          echo: false,
          ...(options.serviceRoot ? { script: path.join(options.serviceRoot, 'dist', 'storage-node', 'main.js') } : {}),
          ...(options.nodeEnv ? { env: childEnv(options.nodeEnv) } : {}),
        }),
      ),
    );
    for (const n of nodeProcs) {
      track(n.child);
      stoppers.push(() => n.stop(2000));
    }
    const nodes = nodeProcs.map((n) => n.url);
    log(`storage nodes ${nodes.join(' ')}`);

    const tokensFile = path.join(tmpDir, 'tokens.json');
    const token = createToken(tokensFile, 'bench', ['executions:prepare', 'executions:deposit', 'whitelist:*']);
    const taskQueue = `bench-${process.pid}`;
    const apiPort = await freePort();
    const env = childEnv(
      {
        TEMPORAL_ADDRESS: temporal.address,
        TEMPORAL_NAMESPACE: temporal.namespace,
        ...temporal.database,
        TEMPORAL_TASK_QUEUE: taskQueue,
        STORAGE_NODES: nodes.join(','),
        STORAGE_NODE_KEYS_FILE: keysFile,
        API_TOKENS_FILE: tokensFile,
        PORT: String(apiPort),
        HOST: '127.0.0.1',
        // One client address sends everything here: the rate limits have tests of their own.
        RATE_LIMIT_PER_IP: '0',
        RATE_LIMIT_PER_WALLET: '0',
        RATE_LIMIT_PER_TOKEN: '0',
        RATE_LIMIT_AUTH_FAILURES_PER_IP: '0',
        SSE_MAX_STREAMS_PER_CLIENT: '100000',
        // Admission is counted on every prepare but refuses none here: its tests set their own bounds,
        // and the suite keeps more executions open than a worker's cache (docs/decisions/0082).
        CAPACITY_OPEN_RUNS: '100000',
        CAPACITY_PER_WALLET: '100000',
        // Each worker's metrics endpoint (ours and Temporal Core's) on a free port of its own.
        WORKER_METRICS_PORT: '0',
        OPERATOR_PORT: '0',
        ...options.env,
      },
      SERVICE_PROCESS_ENV,
    );
    const logDir = path.join(tmpDir, 'logs');
    mkdirSync(logDir);
    const dist = (p: string) => path.join(projectRoot, 'dist', p);
    const serviceDist = (p: string) => path.join(options.serviceRoot ?? projectRoot, 'dist', p);

    const addWorker = async () => {
      const name = `worker-${workers.length + 1}`;
      const worker = await startNodeChild(name, serviceDist('worker/main.js'), {
        env: { ...WORKER_PROCESS_ENV, ...env },
        logFile: path.join(logDir, `${name}.log`),
        readyPattern: /worker polling task queue/,
        nodeArgs: [...WORKER_NODE_ARGS, ...(options.nodeArgs ?? [])],
      });
      workers.push(worker);
      log(`${name} (pid ${worker.pid})`);
      return worker;
    };
    await addWorker();
    const floorTaskQueue = `${taskQueue}-floor`;
    const floor = await startNodeChild('floor-worker', dist('bench/floor/worker.js'), {
      env: { ...env, FLOOR_TASK_QUEUE: floorTaskQueue },
      logFile: path.join(logDir, 'floor-worker.log'),
      readyPattern: /floor worker polling task queue/,
    });
    stoppers.push(() => floor.stop(5000));
    log(`floor worker (pid ${floor.pid})`);
    api = await startNodeChild('api', serviceDist('api/main.js'), {
      env,
      logFile: path.join(logDir, 'api.log'),
      readyPattern: /"msg":"api listening"/,
      nodeArgs: options.nodeArgs,
    });
    const apiUrl = `http://127.0.0.1:${apiPort}`;
    log(`api ${apiUrl} (pid ${api.pid})`);
    const logTails = (lines: number) =>
      [api!, ...workers]
        .map((c) => `--- ${c.name} (${c.logFile}) ---\n${readFileSync(c.logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n')}`)
        .join('\n');
    return {
      tmpDir,
      temporalAddress: temporal.address,
      taskQueue,
      floorTaskQueue,
      apiUrl,
      nodes,
      nodeKeys: readNodeKeysFile(keysFile),
      token,
      api,
      workers,
      logTails,
      addWorker,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
