import { mkdtempSync, rmSync } from 'node:fs';
import { FAULTY_NODE_SCRIPT } from './faulty-storage-node';
import os from 'node:os';
import { temporal } from '@temporalio/proto';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { projectRoot } from '../../config/config';
import { createToken } from '../../tokens/token-store';
import { startChildService, type ChildService } from '../../scripts/lib/child-service';
import { startStorageNode, type StorageNodeProcess } from '../../scripts/lib/storage-nodes';
import { temporalBinary } from '../../scripts/lib/temporal-binary';
import {
  readDevServerSettings,
  startDevServer,
  startDevServerOnFreePort,
  type DevServerSettings,
} from '../../scripts/lib/temporal-dev-server';
import type { RunningTemporalCluster } from '../../scripts/lib/cluster/temporal-cluster';
import { testNodeKeysFile } from './node-keys';
import { freePort } from './ports';
import { TEST_TEMPORAL, testCluster, type TestTemporal } from './temporal-target';
import { childEnv } from '../../config/child-env';
import { sharedBundleEnv } from './workflow-bundle-dir';

/**
 * A stack of real processes for fault tests, separate from the shared test stack so that killing
 * and restarting its parts disturbs no other test: a Temporal dev server on a SQLite file, three
 * storage nodes, and the worker and the API as child processes (`node dist/…/main.js`), each of
 * which a test can SIGKILL and start again on the same port and data.
 */
export class ProcessStack {
  readonly tmpDir = mkdtempSync(path.join(os.tmpdir(), 'intent-service-faults-'));
  readonly tokensFile = path.join(this.tmpDir, 'tokens.json');
  readonly taskQueue = `faults-${process.pid}-${Date.now()}`;
  readonly token = createToken(this.tokensFile, 'all', [
    'executions:prepare',
    'executions:deposit',
    'whitelist:*',
    'refunds:read',
    'refunds:write',
  ]);
  /** The dev server of this stack, or (TEST_TEMPORAL=cluster) the run's test cluster, shared. */
  temporal!: TestTemporal;
  settings!: DevServerSettings;
  /** Set with TEST_TEMPORAL=cluster: stopTemporal/startTemporal then stop and start its server process. */
  cluster?: RunningTemporalCluster;
  nodes: StorageNodeProcess[] = [];
  worker?: ChildService;
  api?: ChildService;
  apiUrl = '';
  client!: Client;
  private apiPort = 0;
  /** The Temporal identity of the worker killWorker() took down, until startWorker() released its activities. */
  private killedWorker?: string;

  /** `env`: more settings for the worker and the API (a chain's, for example); `nodeEnv`: for the storage nodes (OTEL_*). */
  constructor(private readonly options: { env?: Record<string, string>; nodeEnv?: Record<string, string> } = {}) {}

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
    if (TEST_TEMPORAL === 'cluster') {
      this.cluster = await testCluster();
      this.temporal = { address: this.cluster.address, stop: async () => undefined };
    } else {
      const started = await startDevServerOnFreePort(
        temporalBinary(),
        (port) => readDevServerSettings({ port, headless: true, dbFilename: path.join(this.tmpDir, 'temporal.sqlite'), logLevel: 'error' }),
        freePort,
      );
      this.settings = started.settings;
      this.temporal = started.server;
    }
    this.nodes = await Promise.all([1, 2, 3].map((i) => this.startNode(i - 1, 0)));
    this.apiPort = await freePort();
    this.apiUrl = `http://127.0.0.1:${this.apiPort}`;
    await this.startWorker();
    await this.startApi();
    const connection = await Connection.connect({ address: this.temporal.address });
    this.client = new Client({ connection });
    return this;
  }

  /** The settings every worker and API of this stack runs with. */
  env(): NodeJS.ProcessEnv {
    return childEnv({
      PORT: String(this.apiPort),
      TEMPORAL_ADDRESS: this.temporal.address,
      TEMPORAL_TASK_QUEUE: this.taskQueue,
      API_TOKENS_FILE: this.tokensFile,
      DATABASE_FILE: path.join(this.tmpDir, 'read-model.sqlite'),
      // The stack's own, never the project's data/deposit-seed, which npm start uses.
      DEPOSIT_SEED_FILE: path.join(this.tmpDir, 'deposit-seed'),
      STORAGE_NODES: this.nodes.map((n) => n.url).join(','),
      STORAGE_NODE_KEYS_FILE: testNodeKeysFile(),
      LOG_LEVEL: 'warn',
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
      // any free port: a second worker or API on this machine must not fight over the default one
      WORKER_METRICS_PORT: '0',
      OPERATOR_PORT: '0',
      // Rows of the chain tests stay as the ledger wrote them; the refund tests turn payments on.
      REFUND_PAYMENTS: 'off',
      ...sharedBundleEnv(),
      ...this.options.env,
    });
  }

  private async startNode(index: number, port: number): Promise<StorageNodeProcess> {
    return startStorageNode(`fault-node-${index + 1}`, {
      port,
      dataDir: path.join(this.tmpDir, `node-${index + 1}`),
      keysFile: testNodeKeysFile(),
      echo: false,
      script: FAULTY_NODE_SCRIPT,
      ...(this.options.nodeEnv ? { env: childEnv(this.options.nodeEnv) } : {}),
    });
  }

  /** Restarts node `index` on its port and data folder (after a kill). */
  async restartNode(index: number): Promise<void> {
    const old = this.nodes[index];
    await old.stop(2000);
    this.nodes[index] = await this.startNode(index, Number(new URL(old.url).port));
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
    this.worker = startChildService('fault-worker', process.execPath, [path.join(projectRoot, 'dist', 'worker', 'main.js')], {
      readyPattern: /worker polling task queue/,
      env: this.env(),
      echo: false,
    });
    await this.worker.ready;
  }

  /** Fails every activity attempt that the worker `identity` started and that is still open, on this stack's task queue, and takes its workflows off its sticky queue. */
  private async failActivitiesOf(identity: string): Promise<void> {
    const STARTED = temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED;
    const open = this.client.workflow.list({ query: `TaskQueue = '${this.taskQueue}' AND ExecutionStatus = 'Running'` });
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

  async startApi(): Promise<void> {
    this.api = startChildService('fault-api', process.execPath, [path.join(projectRoot, 'dist', 'api', 'main.js')], {
      readyPattern: /"msg":"api listening"/,
      env: { ...this.env(), LOG_LEVEL: 'info' },
      echo: false,
    });
    await this.api.ready;
  }

  /** Another API of this stack on a port of its own, sharing its read model and task queue; the caller stops it. */
  async startExtraApi(name: string): Promise<{ api: ChildService; url: string }> {
    const port = await freePort();
    const api = startChildService(name, process.execPath, [path.join(projectRoot, 'dist', 'api', 'main.js')], {
      readyPattern: /"msg":"api listening"/,
      env: { ...this.env(), PORT: String(port), LOG_LEVEL: 'info' },
      echo: false,
    });
    await api.ready;
    return { api, url: `http://127.0.0.1:${port}` };
  }

  /** SIGKILL: no shutdown hooks run, as when a machine dies. */
  static async kill(service: ChildService | undefined): Promise<void> {
    if (!service || service.child.exitCode !== null || service.child.signalCode !== null) return;
    service.child.kill('SIGKILL');
    await service.exited;
  }

  async stopTemporal(): Promise<void> {
    if (this.cluster) await this.cluster.stopServer(10_000);
    else await this.temporal.stop(10_000);
  }

  /** Starts the dev server again on the same port and SQLite file (the cluster's server on its PostgreSQL). */
  async startTemporal(): Promise<void> {
    if (this.cluster) await this.cluster.startServer();
    else this.temporal = await startDevServer(temporalBinary(), this.settings);
  }

  async stop(): Promise<void> {
    await ProcessStack.kill(this.api);
    await this.worker?.stop(5000);
    await this.client?.connection.close().catch(() => undefined);
    await Promise.all(this.nodes.map((n) => n.stop(2000)));
    await this.temporal?.stop(5000);
    rmSync(this.tmpDir, { recursive: true, force: true });
  }
}
