import { mkdtempSync, rmSync } from 'node:fs';
import { FAULTY_NODE_SCRIPT } from './faulty-storage-node';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import pino, { type Logger } from 'pino';
import { startApi, type RunningApi } from '../../api/server';
import { loadConfig, type Config } from '../../config/config';
import { createToken } from '../../tokens/token-store';
import { startWorker, type RunningWorker } from '../../worker/create-worker';
import { launchStack } from '../../scripts/lib/stack/launch-stack';
import { EVERY_SCOPE, STACK_SERVICE_SETTINGS } from '../../scripts/lib/stack/stack-settings';
import type { StorageNodeProcess } from '../../scripts/lib/storage-nodes';
import { temporalBinary } from '../../scripts/lib/temporal-binary';
import { testNodeKeysFile } from './node-keys';
import { TEST_TEMPORAL, testCluster, type TestTemporal } from './temporal-target';
import { childEnv } from '../../config/child-env';

/**
 * The real stack every integration test talks to, started once per mocha run: a Temporal dev
 * server (the pinned CLI binary, headless, in a temporary SQLite file; with TEST_TEMPORAL=cluster
 * the Temporal server on PostgreSQL of test/support/temporal-target.ts), three storage-node
 * processes, a worker and the API on a free port. Nothing is mocked.
 */
export interface Stack {
  config: Config;
  tmpDir: string;
  /** The dev server of this stack, or (TEST_TEMPORAL=cluster) the run's test cluster. */
  temporal: TestTemporal;
  temporalBinary: string;
  client: Client;
  worker: RunningWorker;
  api: RunningApi;
  nodes: StorageNodeProcess[];
  /** Tokens by name: `all` (every scope), `prepare`, `deposit`, `devAdd` (developer add only), `userAll`. */
  tokens: Record<string, string>;
  /** Log lines the API wrote (JSON objects), for tests of logging. */
  apiLog: Array<Record<string, unknown>>;
  logger: Logger;
}

let stackPromise: Promise<Stack> | undefined;

/** Starts the stack on first use; later calls get the same one. */
export function getStack(): Promise<Stack> {
  stackPromise ??= startStack();
  return stackPromise;
}

export function stackStarted(): boolean {
  return stackPromise !== undefined;
}

async function startStack(): Promise<Stack> {
  // The SDK logs every worker state change at INFO; tests want only its errors (activity failures they provoke on purpose log as warnings).
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const tmpDir = mkdtempSync(path.join(os.tmpdir(), 'intent-service-test-'));
  const binary = temporalBinary();
  // Temporal and the storage nodes as processes; the worker and the API below run in this process.
  const launched = await launchStack({
    temporal:
      TEST_TEMPORAL === 'cluster'
        ? // the run's one cluster, shared with other stacks; the root hook stops it
          { address: (await testCluster()).address }
        : { devServer: { headless: true, dbFilename: path.join(tmpDir, 'temporal.sqlite'), logLevel: 'error' } },
    nodes: {
      nodes: [1, 2, 3].map((i) => ({ port: 0, dataDir: path.join(tmpDir, `node-${i}`) })),
      keysFile: testNodeKeysFile(),
      name: (i) => `node-${i + 1}`,
      echo: false,
      script: FAULTY_NODE_SCRIPT,
    },
  });
  const temporal: TestTemporal = { address: launched.temporal.address, stop: (graceMs = 5000) => launched.temporal.release(graceMs) };
  const nodes = launched.nodes;
  const tokensFile = path.join(tmpDir, 'tokens.json');
  const config = loadConfig(
    childEnv({
      PORT: '0',
      OPERATOR_PORT: '0',
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_TASK_QUEUE: `test-${process.pid}`,
      API_TOKENS_FILE: tokensFile,
      DATABASE_FILE: path.join(tmpDir, 'read-model.sqlite'),
      DATABASE_URL: '',
      WEBHOOK_URLS: '',
      CORS_ORIGINS: '',
      SSE_POLL_MS: '200',
      STORAGE_NODES: nodes.map((n) => n.url).join(','),
      STORAGE_NODE_KEYS_FILE: testNodeKeysFile(),
      ALLOWED_DOMAINS: 'localhost,app.example',
      WHITELIST_MAX_BATCH_LEN: '100',
      WHITELIST_TIMEOUT_MS: '5000',
      ...STACK_SERVICE_SETTINGS,
      // The shared stack's tests pin what one copy per entry does (its node's faults decide a
      // batch); the replicated answers have their own stacks (test/faults/replicas.test.ts).
      STORAGE_REPLICAS: '1',
    }),
  );
  const tokens: Record<string, string> = {
    all: createToken(tokensFile, 'all', [...EVERY_SCOPE]),
    prepare: createToken(tokensFile, 'prepare', ['executions:prepare']),
    deposit: createToken(tokensFile, 'deposit', ['executions:deposit']),
    devAdd: createToken(tokensFile, 'dev-add', ['whitelist:developer:add']),
    userAll: createToken(tokensFile, 'user-all', ['whitelist:user:*']),
  };

  const worker = await startWorker(config, temporal.address);
  const apiLog: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void apiLog.push(JSON.parse(line)) });
  const api = await startApi(config, { temporalAddress: temporal.address, storageNodes: nodes.map((n) => n.url), logger });
  const connection = await Connection.connect({ address: temporal.address });
  const client = new Client({ connection, namespace: config.temporal.namespace });
  return { config, tmpDir, temporal, temporalBinary: binary, client, worker, api, nodes, tokens, apiLog, logger };
}

/** Stops everything the stack started (the root hook calls this once after all tests). */
export async function stopStack(): Promise<void> {
  if (!stackPromise) return;
  const stack = await stackPromise.catch(() => undefined);
  stackPromise = undefined;
  if (!stack) return;
  // Each step has a bound: one that hangs is named (and the steps after it still run, so no
  // process is left behind), instead of the root hook's bare timeout.
  const hung: string[] = [];
  const step = async (name: string, boundMs: number, run: () => Promise<unknown>, state?: () => unknown) => {
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<'hung'>((resolve) => (timer = setTimeout(() => resolve('hung'), boundMs)));
    const outcome = await Promise.race([run().catch(() => undefined), bound]);
    clearTimeout(timer);
    if (outcome === 'hung') hung.push(`${name} (over ${boundMs} ms${state ? `; ${JSON.stringify(state())}` : ''})`);
  };
  await step('api.close', 15_000, () => stack.api.close(2000));
  // What the worker still waits for: activations, activities (local or not), polls.
  await step(
    'worker.shutdown',
    15_000,
    () => stack.worker.shutdown(),
    () => stack.worker.worker.getStatus(),
  );
  await step('client.connection.close', 5_000, () => stack.client.connection.close());
  await step('storage nodes stop', 5_000, () => Promise.all(stack.nodes.map((n) => n.stop(2000))));
  await step('temporal.stop', 10_000, () => stack.temporal.stop(5000));
  rmSync(stack.tmpDir, { recursive: true, force: true });
  if (hung.length > 0) throw new Error(`the test stack did not stop: ${hung.join(', ')}`);
}

/**
 * Another API process's worth of API (in this process) on the stack's Temporal and read model:
 * by default the stack's config, nodes and logger, as a second API behind a load balancer would
 * be; `config` for one that differs (its limits, its task queue, …).
 */
export function startStackApi(
  stack: Stack,
  options: { config?: Config; temporalAddress?: string; storageNodes?: string[]; logger?: Logger } = {},
): Promise<RunningApi> {
  return startApi(options.config ?? stack.config, {
    temporalAddress: options.temporalAddress ?? stack.temporal.address,
    storageNodes: options.storageNodes ?? stack.nodes.map((n) => n.url),
    logger: options.logger ?? stack.logger,
  });
}
