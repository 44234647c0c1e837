import path from 'node:path';
import { childEnv } from '../../../config/child-env';
import { projectRoot } from '../../../config/config';
import { createNodeKeysFile } from '../../../lib/node-keys-file';
import { LOCAL_CHAIN_PORT, startLocalChain, type AnvilProcess } from '../anvil';
import { SERVICE_PROCESS_ENV, WORKER_NODE_ARGS, WORKER_PROCESS_ENV } from '../service-env';
import { provisionDepositKeys, type DepositKeyFiles } from '../deposit-keys';
import { startStorageNode, type StorageNodeProcess } from '../storage-nodes';
import { childServiceStarter, killProcess, type ServiceProcess, type StackProcess, type StartService } from './service-process';
import { startStackTemporal, type StackTemporal, type TemporalChoice } from './stack-temporal';

export type { TemporalChoice, StackTemporal } from './stack-temporal';
export type { ServiceProcess, ServiceSpec, StackProcess, StartService } from './service-process';

/** A part as it comes up, for a caller that watches them (npm start's supervisor). */
export interface StartedPart {
  name: string;
  /** Stops it with the stack's grace for its kind. */
  stop(): Promise<void>;
  exited?: Promise<unknown>;
}

/** An API process: its port, its own settings on top of the stack's, its name if not `api-<n>`. */
export interface ApiSpec {
  port: number;
  env?: Record<string, string>;
  name?: string;
}

export interface LaunchOptions<P extends ServiceProcess> {
  temporal: TemporalChoice;
  nodes?: {
    /** One entry a node: its port (0: any free one), its data folder and more flags (`--public-url`). */
    nodes: ReadonlyArray<{ port: number; dataDir: string; extraArgs?: readonly string[] }>;
    /** The deployment's keys file; `createKeysFile`: made here if it does not exist yet. */
    keysFile: string;
    createKeysFile?: boolean;
    name?: (index: number) => string;
    /** Another entry point of the node (the tests' build with faults). */
    script?: string;
    echo?: boolean;
    /** The nodes' environment (they read only OTEL_*); default: this process's. */
    env?: NodeJS.ProcessEnv;
  };
  /**
   * A local anvil chain (a block a second), its state kept in `stateFile`; `prepare` readies it
   * for the service (a token deployed, a gas key written) and answers settings for the workers and APIs.
   */
  chain?: { stateFile: string; prepare?: (url: string) => Promise<Record<string, string | undefined>> };
  service?: {
    /** Settings of every worker and API on top of the stack's addresses (an undefined value removes one). */
    env?: Record<string, string | undefined>;
    /** One entry a worker: its own settings on top. */
    workers?: ReadonlyArray<Record<string, string>>;
    /** One entry an API: its port and its own settings on top. */
    apis?: readonly ApiSpec[];
    workerName?: (index: number) => string;
    apiName?: (index: number) => string;
    /** More node flags for the workers and the APIs (e.g. --cpu-prof). */
    nodeArgs?: readonly string[];
    /** The project whose built dist/ the workers, APIs and nodes run from (default: this one). */
    serviceRoot?: string;
    /** How a process is started and waited for (default: a child service, echoed if `echo`). */
    start?: StartService<P>;
    echo?: boolean;
  };
  /**
   * The deposit key material this stack owns: provisioned before the workers start (the seed made
   * once, the public key written), the seed given to the workers and the public key to the APIs.
   */
  depositKeys?: DepositKeyFiles;
  /** How long each kind gets between SIGTERM and SIGKILL when stopped (ms). */
  graceMs?: { services?: number; chain?: number; nodes?: number; temporal?: number };
  /**
   * Called as each part comes up, in start order. With `stopOnFailure: false` the caller stops
   * them if a later part fails (npm start's supervisor, which says what it stops).
   */
  onStarted?: (part: StartedPart) => void;
  stopOnFailure?: boolean;
  /** Progress lines (what is started where). */
  log?: (line: string) => void;
}

export interface LaunchedStack<P extends ServiceProcess> {
  /** The stack's Temporal; after stopTemporal/startTemporal, the server started again. */
  readonly temporal: StackTemporal;
  /** The storage nodes, in order (a restarted node takes its place; a caller may put its own in one). */
  readonly nodes: StorageNodeProcess[];
  readonly nodeUrls: () => string[];
  readonly keysFile?: string;
  readonly chain?: AnvilProcess;
  readonly workers: P[];
  readonly apis: P[];
  readonly apiUrls: string[];
  /** The environment every worker and API of this stack gets (before its own settings). */
  env(): NodeJS.ProcessEnv;
  /** Starts worker `index` (again, after a stop or kill), or one more past the last. */
  startWorker(index: number, env?: Record<string, string>): Promise<P>;
  /** Starts API `index` again, on its port. */
  startApi(index: number): Promise<P>;
  /** One more API, on `port`, stopped with the others. */
  addApi(spec: ApiSpec): Promise<P>;
  /** Another `node <script>` (an absolute path) on this stack's settings, stopped after the workers. */
  startService(name: string, script: string, readyPattern: RegExp, env?: Record<string, string>): Promise<P>;
  /** SIGKILL, as when a machine dies. */
  kill(service: ServiceProcess | undefined): Promise<void>;
  /** Stops node `index` and starts it on the same port and data folder. */
  restartNode(index: number): Promise<StorageNodeProcess>;
  stopTemporal(): Promise<void>;
  startTemporal(): Promise<void>;
  /**
   * Stops everything this stack started: the APIs first, then the workers (so that requests in
   * flight still get their answers), the other services, the chain, the nodes, and Temporal last.
   */
  stop(): Promise<void>;
}

const WORKER_READY = /worker polling task queue/;
const API_READY = /"msg":"api listening"/;

/**
 * Starts the service's processes in order, each only when asked: Temporal (a dev server, or a
 * given address), the storage nodes, a local chain, the workers (in parallel), then the APIs (in
 * parallel), each waited for. A part that came up is stopped again if a later one fails.
 */
export async function launchStack<P extends ServiceProcess = StackProcess>(options: LaunchOptions<P>): Promise<LaunchedStack<P>> {
  const grace = { services: 15_000, chain: 10_000, nodes: 10_000, temporal: 5000, ...options.graceMs };
  const service = options.service ?? {};
  const start = service.start ?? (childServiceStarter(service.echo ?? true) as unknown as StartService<P>);
  const dist = (p: string) => path.join(service.serviceRoot ?? projectRoot, 'dist', p);
  const started = (name: string, stop: () => Promise<void>, exited?: Promise<unknown>) => options.onStarted?.({ name, stop, exited });
  const nodeOptions = options.nodes;
  const workerEnvs = [...(service.workers ?? [])];
  const apiSpecs = [...(service.apis ?? [])];
  const others: P[] = [];
  const log = options.log ?? (() => undefined);
  let chainSettings: Record<string, string | undefined> = {};

  let temporal: StackTemporal | undefined;
  let chain: AnvilProcess | undefined;
  const nodes: StorageNodeProcess[] = [];
  const workers: P[] = [];
  const apis: P[] = [];

  const startNode = (index: number, port: number) =>
    startStorageNode(nodeOptions!.name?.(index) ?? `storage-node-${index + 1}`, {
      port,
      dataDir: nodeOptions!.nodes[index].dataDir,
      keysFile: nodeOptions!.keysFile,
      ...(nodeOptions!.nodes[index].extraArgs ? { extraArgs: [...nodeOptions!.nodes[index].extraArgs!] } : {}),
      ...(nodeOptions!.echo === undefined ? {} : { echo: nodeOptions!.echo }),
      script: nodeOptions!.script ?? dist('storage-node/main.js'),
      ...(nodeOptions!.env ? { env: nodeOptions!.env } : {}),
    });

  const env = () =>
    childEnv(
      {
        TEMPORAL_ADDRESS: temporal?.address,
        ...(nodeOptions ? { STORAGE_NODES: nodes.map((n) => n.url).join(','), STORAGE_NODE_KEYS_FILE: nodeOptions.keysFile } : {}),
        ...(chain ? { CHAIN_RPC_URL: chain.url } : {}),
        ...(options.depositKeys
          ? { DEPOSIT_SEED_FILE: options.depositKeys.seedFile, DEPOSIT_XPUB_FILE: options.depositKeys.xpubFile }
          : {}),
        ...chainSettings,
        ...service.env,
      },
      SERVICE_PROCESS_ENV,
    );

  const startWorker = async (index: number, own?: Record<string, string>) => {
    if (own) workerEnvs[index] = own;
    const worker = await start({
      name: service.workerName?.(index) ?? `worker-${index + 1}`,
      script: dist('worker/main.js'),
      nodeArgs: [...WORKER_NODE_ARGS, ...(service.nodeArgs ?? [])],
      // The caller's environment wins over the worker's memory settings, as with `npm run worker`.
      env: { ...WORKER_PROCESS_ENV, ...env(), ...workerEnvs[index] },
      readyPattern: WORKER_READY,
    });
    workers[index] = worker;
    started(worker.name, () => worker.stop(grace.services), exitOf(worker));
    return worker;
  };

  const startApi = async (index: number) => {
    const { port, env: own, name } = apiSpecs[index];
    const api = await start({
      name: name ?? service.apiName?.(index) ?? `api-${index + 1}`,
      script: dist('api/main.js'),
      nodeArgs: [...(service.nodeArgs ?? [])],
      // The API derives addresses from the public key: it is never told where the seed is.
      env: { ...env(), DEPOSIT_SEED_FILE: undefined, ...own, PORT: String(port) },
      readyPattern: API_READY,
    });
    apis[index] = api;
    started(api.name, () => api.stop(grace.services), exitOf(api));
    return api;
  };

  const stop = async () => {
    for (const api of apis) await api?.stop(grace.services).catch(() => undefined);
    await Promise.all(workers.map((w) => w?.stop(grace.services).catch(() => undefined)));
    for (const other of others.splice(0).reverse()) await other.stop(grace.services).catch(() => undefined);
    await chain?.stop(grace.chain).catch(() => undefined);
    await Promise.all(nodes.map((n) => n.stop(grace.nodes).catch(() => undefined)));
    await temporal?.release(grace.temporal).catch(() => undefined);
  };

  try {
    // First: a seed that is missing beside the read model's addresses stops the launch before anything starts.
    if (options.depositKeys) for (const line of await provisionDepositKeys(options.depositKeys)) log(line);
    temporal = await startStackTemporal(options.temporal, log);
    if (temporal.exited) started('temporal', () => temporal!.release(grace.temporal), temporal.exited);

    if (nodeOptions) {
      // The nodes are ours: so is their key. Nodes configured elsewhere come with their own keys file.
      if (nodeOptions.createKeysFile && createNodeKeysFile(nodeOptions.keysFile))
        log(`created the storage node keys file ${nodeOptions.keysFile}`);
      const up = await Promise.allSettled(nodeOptions.nodes.map((n, i) => startNode(i, n.port)));
      // The ones that came up are the stack's (and the watcher's) to stop, even if another did not.
      for (const result of up) if (result.status === 'fulfilled') nodes.push(result.value);
      for (const node of nodes) started(node.name, () => node.stop(grace.nodes), node.exited);
      const failed = up.find((r) => r.status === 'rejected');
      if (failed) throw failed.reason;
    }

    if (options.chain) {
      log(`starting a local anvil chain on 127.0.0.1:${LOCAL_CHAIN_PORT} (state ${options.chain.stateFile})`);
      chain = await startLocalChain(options.chain.stateFile);
      started('anvil', () => chain!.stop(grace.chain), chain.exited);
      chainSettings = (await options.chain.prepare?.(chain.url)) ?? {};
    }

    await Promise.all(workerEnvs.map((_, i) => startWorker(i)));
    await Promise.all(apiSpecs.map((_, i) => startApi(i)));
  } catch (err) {
    if (options.stopOnFailure ?? true) await stop();
    throw err;
  }

  return {
    get temporal() {
      return temporal!;
    },
    nodes,
    nodeUrls: () => nodes.map((n) => n.url),
    keysFile: nodeOptions?.keysFile,
    chain,
    workers,
    apis,
    get apiUrls() {
      return apiSpecs.map((a) => `http://127.0.0.1:${a.port}`);
    },
    env,
    startWorker,
    startApi,
    addApi: (spec) => startApi(apiSpecs.push(spec) - 1),
    startService: async (name, script, readyPattern, own = {}) => {
      const other = await start({ name, script, nodeArgs: [], env: { ...env(), ...own }, readyPattern });
      others.push(other);
      return other;
    },
    kill: killProcess,
    restartNode: async (index) => {
      const old = nodes[index];
      await old.stop(2000);
      nodes[index] = await startNode(index, Number(new URL(old.url).port));
      return nodes[index];
    },
    stopTemporal: () => temporal!.stopServer(10_000),
    startTemporal: async () => {
      temporal = await temporal!.startServer();
    },
    stop,
  };
}

/** A process's exit, for one that says it (a ChildService does). */
function exitOf(p: ServiceProcess): Promise<unknown> | undefined {
  return (p as Partial<StackProcess>).exited;
}
