import path from 'node:path';
import { createInterface } from 'node:readline';
import { projectRoot } from '../../config/config';
import { startChildService, type ChildService } from '../../scripts/lib/child-service';
import type { Stack } from './stack';
import { childEnv } from '../../config/child-env';
import { sharedBundleEnv } from './workflow-bundle-dir';

/** A `node dist/…/main.js` child process, its parsed JSON log lines, and the URL it logged. */
export interface ServiceProcess extends ChildService {
  url: string;
  /** Every stdout line that parsed as JSON, in order. */
  log: Array<Record<string, any>>;
  /**
   * Resolves once stdout has ended and every line is in `log`. A child's `exit` can come before
   * its last output has been read, so a test that reads `log` after the process ended awaits this.
   */
  logComplete: Promise<void>;
}

/** The env that points a child API or worker at the shared stack (its Temporal, nodes, tokens). */
export function stackEnv(stack: Stack, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return childEnv({
    PORT: '0',
    OPERATOR_PORT: '0',
    HOST: '127.0.0.1',
    TEMPORAL_ADDRESS: stack.temporal.address,
    TEMPORAL_NAMESPACE: stack.config.temporal.namespace,
    TEMPORAL_TASK_QUEUE: stack.config.temporal.taskQueue,
    API_TOKENS_FILE: stack.config.apiTokensFile,
    STORAGE_NODES: stack.nodes.map((n) => n.url).join(','),
    STORAGE_NODE_KEYS_FILE: stack.config.storageNodeKeysFile,
    // as the shared stack's own API and worker (test/support/stack.ts): one copy of each entry
    STORAGE_REPLICAS: '1',
    LOG_LEVEL: 'info',
    // as the shared stack's own API (test/support/stack.ts)
    CAPACITY_OPEN_RUNS: '100000',
    CAPACITY_PER_WALLET: '100000',
    ...sharedBundleEnv(),
    ...extra,
  });
}

/**
 * Starts `dist/{script}` and waits for the JSON log line whose `msg` is `readyMsg`; the first
 * `url` field logged by then (the API's listening URL, the worker's metrics URL) becomes `url`. Spawned, never run with spawnSync: the test process hosts the stack's worker.
 */
export async function startServiceProcess(name: string, script: string, readyMsg: string, env: NodeJS.ProcessEnv): Promise<ServiceProcess> {
  const service = startChildService(name, process.execPath, [path.join(projectRoot, 'dist', script)], {
    readyPattern: new RegExp(`"msg":"${readyMsg}"`),
    env,
    echo: false,
    readyTimeoutMs: 30_000,
  });
  const log: Array<Record<string, any>> = [];
  const lines = createInterface({ input: service.child.stdout! });
  const logComplete = new Promise<void>((resolve) => lines.once('close', resolve));
  lines.on('line', (line) => {
    try {
      log.push(JSON.parse(line));
    } catch {
      // not a log line (e.g. a stack trace); the ready watcher still sees it
    }
  });
  await service.ready;
  const url = log.find((l) => typeof l.url === 'string')?.url ?? '';
  return Object.assign(service, { url, log, logComplete });
}
