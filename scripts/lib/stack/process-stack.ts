import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { temporal as proto } from '@temporalio/proto';
import { Client, Connection } from '@temporalio/client';
import { childEnv } from '../../../config/child-env';
import { freePort } from '../../../config/free-port';
import { createToken } from '../../../tokens/token-store';
import { serviceTaskQueues } from '../../../contracts/temporal';
import type { ChildService } from '../child-service';
import type { RunningTemporalCluster } from '../cluster/temporal-cluster';
import type { DevServerSettings } from '../temporal-dev-server';
import type { StorageNodeProcess } from '../storage-nodes';
import { launchStack, type LaunchedStack, type StackProcess } from './launch-stack';
import { childServiceStarter, killProcess } from './service-process';
import { EVERY_SCOPE, STACK_SERVICE_SETTINGS } from './stack-settings';

/** The shape the stacks use of a Temporal server: its address, and how to stop it. */
export interface StackTemporalServer {
  readonly address: string;
  stop(graceMs?: number): Promise<void>;
}

export interface ProcessStackOptions {
  /** More settings for the worker and the API (a chain's, for example). */
  env?: Record<string, string>;
  /** Settings of the storage nodes' processes (OTEL_*). */
  nodeEnv?: Record<string, string>;
  /** Another entry point for the storage nodes (the tests' build with faults). */
  nodeScript?: string;
  /** The storage nodes' keys file (default: one made in the stack's folder). */
  keysFile?: string;
  /** A running cluster to use instead of a dev server of the stack's own. */
  cluster?: () => Promise<RunningTemporalCluster>;
  /** Per node (three): its port (default any free one) and more flags, e.g. `--public-url` for a node reached through a proxy. */
  nodes?: ReadonlyArray<{ port: number; extraArgs?: readonly string[] }>;
  /** Hears every output line of the worker and the API processes (`name` says whose). */
  onLine?: (name: string, line: string) => void;
}

/**
 * A stack of real processes, each of which can be SIGKILLed and started again on the same port
 * and data: a Temporal dev server on a SQLite file (or a given cluster), three storage nodes, and
 * the worker and the API as child processes (`node dist/…/main.js`). Fault tests and the benches
 * that kill parts use it.
 */
export class ProcessStack {
  readonly tmpDir = mkdtempSync(path.join(os.tmpdir(), 'intent-service-faults-'));
  readonly tokensFile = path.join(this.tmpDir, 'tokens.json');
  readonly taskQueue = `faults-${process.pid}-${Date.now()}`;
  /** Every scope but refunds:approve: the refund tests show that refunds:write does not approve. */
  readonly token = createToken(
    this.tokensFile,
    'all',
    EVERY_SCOPE.filter((scope) => scope !== 'refunds:approve'),
  );
  /** Set with a cluster: stopTemporal/startTemporal then stop and start its server process. */
  cluster?: RunningTemporalCluster;
  apiUrl = '';
  client!: Client;
  private launched?: LaunchedStack<StackProcess>;
  private apiPort = 0;
  /** The Temporal identity of the worker killWorker() took down, until startWorker() released its activities. */
  private killedWorker?: string;

  /** `env`: more settings for the worker and the API; `nodeEnv`: for the storage nodes (OTEL_*). */
  constructor(private readonly options: ProcessStackOptions = {}) {}

  /** The dev server of this stack, or the given cluster's (shared: never stopped here). */
  get temporal(): StackTemporalServer {
    const server = this.launched!.temporal;
    return { address: server.address, stop: (graceMs = 5000) => server.release(graceMs) };
  }

  /** The dev server's settings (its port and SQLite file); unset on a cluster. */
  get settings(): DevServerSettings {
    return this.launched!.temporal.settings!;
  }

  get nodes(): StorageNodeProcess[] {
    return this.launched?.nodes ?? [];
  }

  get worker(): ChildService | undefined {
    return this.launched?.workers[0];
  }

  get api(): ChildService | undefined {
    return this.launched?.apis[0];
  }

  async start(): Promise<this> {
    try {
      return await this.startParts();
    } catch (err) {
      // A part that came up must not outlive a failed start.
      await this.stop().catch(() => undefined);
      throw err;
    }
  }

  private async startParts(): Promise<this> {
    if (this.options.cluster) this.cluster = await this.options.cluster();
    this.apiPort = await freePort();
    this.apiUrl = `http://127.0.0.1:${this.apiPort}`;
    const cluster = this.cluster;
    this.launched = await launchStack({
      temporal: cluster
        ? { address: cluster.address, stopServer: (graceMs) => cluster.stopServer(graceMs), startServer: () => cluster.startServer() }
        : { devServer: { headless: true, dbFilename: path.join(this.tmpDir, 'temporal.sqlite'), logLevel: 'error' } },
      nodes: {
        nodes: [1, 2, 3].map((i) => ({
          port: this.options.nodes?.[i - 1]?.port ?? 0,
          dataDir: this.nodeDataDir(i - 1),
          ...(this.options.nodes?.[i - 1]?.extraArgs ? { extraArgs: this.options.nodes[i - 1].extraArgs } : {}),
        })),
        keysFile: this.options.keysFile ?? path.join(this.tmpDir, 'storage-node-keys'),
        createKeysFile: this.options.keysFile === undefined,
        name: (i) => `fault-node-${i + 1}`,
        echo: false,
        ...(this.options.nodeScript ? { script: this.options.nodeScript } : {}),
        ...(this.options.nodeEnv ? { env: childEnv(this.options.nodeEnv) } : {}),
      },
      service: {
        env: {
          PORT: String(this.apiPort),
          TEMPORAL_TASK_QUEUE: this.taskQueue,
          API_TOKENS_FILE: this.tokensFile,
          DATABASE_FILE: path.join(this.tmpDir, 'read-model.sqlite'),
          ...STACK_SERVICE_SETTINGS,
          // any free port: a second worker or API on this machine must not fight over the default one
          WORKER_METRICS_PORT: '0',
          OPERATOR_PORT: '0',
          // Rows of the chain tests stay as the ledger wrote them; the refund tests turn payments on.
          REFUND_PAYMENTS: 'off',
          ...this.options.env,
        },
        workers: [{}],
        apis: [{ port: this.apiPort, env: { LOG_LEVEL: 'info' } }],
        workerName: (i) => (i === 0 ? 'fault-worker' : `fault-worker-${i + 1}`),
        apiName: () => 'fault-api',
        echo: false,
        ...(this.options.onLine ? { start: childServiceStarter(false, this.options.onLine) } : {}),
      },
      // The stack's own, never the project's data/deposit-seed, which npm start uses.
      depositKeys: {
        seedFile: path.join(this.tmpDir, 'deposit-seed'),
        xpubFile: path.join(this.tmpDir, 'deposit-xpub'),
        holdsAddresses: async () => false,
      },
      graceMs: { services: 5000, nodes: 2000, temporal: 5000 },
    });
    const connection = await Connection.connect({ address: this.launched.temporal.address });
    this.client = new Client({ connection });
    return this;
  }

  /** The settings every worker and API of this stack runs with. */
  env(): NodeJS.ProcessEnv {
    return this.launched!.env();
  }

  /** The data folder of node `index` (0-based). */
  nodeDataDir(index: number): string {
    return path.join(this.tmpDir, `node-${index + 1}`);
  }

  /** Restarts node `index` on its port and data folder (after a kill). */
  async restartNode(index: number): Promise<void> {
    await this.launched!.restartNode(index);
  }

  /**
   * SIGKILLs the worker (as ProcessStack.kill), and remembers it: the next startWorker() first fails
   * the activity attempts it had started. Temporal would time them out anyway, at their
   * startToCloseTimeout (30 s for the chain and refund activities), and then retry them as it does
   * here at once; the attempts, their retries and the workflows' histories are the same. Its
   * workflows leave its sticky queue too, which Temporal would do after 10 s.
   */
  async killWorker(): Promise<void> {
    const pid = this.worker?.child.pid;
    await ProcessStack.kill(this.worker);
    // The SDK's default worker identity (worker/ sets none of its own).
    if (pid !== undefined) this.killedWorker = `${pid}@${os.hostname()}`;
  }

  async startWorker(): Promise<void> {
    if (this.killedWorker !== undefined) await this.failActivitiesOf(this.killedWorker);
    this.killedWorker = undefined;
    await this.launched!.startWorker(0);
  }

  /** Fails every activity attempt that the worker `identity` started and that is still open, on this stack's task queues (the service's, the refunds' and the webhooks'), and takes its workflows off its sticky queue. */
  private async failActivitiesOf(identity: string): Promise<void> {
    const STARTED = proto.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED;
    const open = this.client.workflow.list({
      query: `(${serviceTaskQueues(this.taskQueue)
        .map((q) => `TaskQueue = '${q}'`)
        .join(' OR ')}) AND ExecutionStatus = 'Running'`,
    });
    for await (const run of open) {
      const described = await this.client.workflow.getHandle(run.workflowId, run.runId).describe();
      for (const activity of described.raw.pendingActivities ?? []) {
        if (activity.state !== STARTED || activity.lastWorkerIdentity !== identity) continue;
        await this.client.activity
          .fail(
            { workflowId: run.workflowId, runId: run.runId, activityId: activity.activityId! },
            new Error(`worker ${identity} was SIGKILLed`),
          )
          // Completed or retried meanwhile: nothing is left to release.
          .catch(() => undefined);
      }
      // Its next workflow task goes to the task queue at once, not to the dead worker's sticky queue
      // until that times out (10 s); the new worker would replay the history either way.
      await this.client.workflowService
        .resetStickyTaskQueue({ namespace: this.client.options.namespace, execution: { workflowId: run.workflowId, runId: run.runId } })
        .catch(() => undefined);
    }
  }

  /** One more worker of this stack (with `env` on top of the stack's settings), stopped with the others. */
  async startExtraWorker(env: Record<string, string> = {}): Promise<ChildService> {
    return this.launched!.startWorker(this.launched!.workers.length, env);
  }

  async startApi(): Promise<void> {
    await this.launched!.startApi(0);
  }

  /** Another API of this stack on a port of its own (with `env` on top of the stack's settings), sharing its read model and task queue; the caller stops it. */
  async startExtraApi(name: string, env: Record<string, string> = {}): Promise<{ api: ChildService; url: string }> {
    const port = await freePort();
    const api = await this.launched!.addApi({ port, env: { LOG_LEVEL: 'info', ...env }, name });
    return { api, url: `http://127.0.0.1:${port}` };
  }

  /** SIGKILL: no shutdown hooks run, as when a machine dies. */
  static async kill(service: ChildService | undefined): Promise<void> {
    await killProcess(service);
  }

  async stopTemporal(): Promise<void> {
    await this.launched!.stopTemporal();
  }

  /** Starts the dev server again on the same port and SQLite file (the cluster's server on its PostgreSQL). */
  async startTemporal(): Promise<void> {
    await this.launched!.startTemporal();
  }

  async stop(): Promise<void> {
    await ProcessStack.kill(this.api);
    await this.client?.connection.close().catch(() => undefined);
    await this.launched?.stop();
    rmSync(this.tmpDir, { recursive: true, force: true });
  }
}
