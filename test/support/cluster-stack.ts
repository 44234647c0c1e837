import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { projectRoot } from '../../config/config';
import { createToken } from '../../tokens/token-store';
import { startChildService, type ChildService } from '../../scripts/lib/child-service';
import type { RunningTemporalCluster } from '../../scripts/lib/cluster/temporal-cluster';
import { WORKER_NODE_ARGS, WORKER_PROCESS_ENV } from '../../scripts/lib/service-env';
import { startStorageNode, type StorageNodeProcess } from '../../scripts/lib/storage-nodes';
import { testNodeKeysFile } from './node-keys';
import { freePort } from './ports';
import { testCluster } from './temporal-target';
import { childEnv } from '../../config/child-env';

/**
 * `npm run cluster`'s topology as processes a test can kill: on the run's test cluster (Temporal
 * server on PostgreSQL), three storage nodes, two workers and two APIs (`node dist/…/main.js`),
 * each restartable on its own port. Its own task queue and tokens file.
 */
export class ClusterStack {
  readonly tmpDir = mkdtempSync(path.join(os.tmpdir(), 'intent-service-cluster-stack-'));
  readonly tokensFile = path.join(this.tmpDir, 'tokens.json');
  readonly taskQueue = `cluster-${process.pid}-${Date.now()}`;
  readonly token = createToken(this.tokensFile, 'all', ['executions:prepare', 'executions:deposit', 'whitelist:*']);
  cluster!: RunningTemporalCluster;
  nodes: StorageNodeProcess[] = [];
  workers: ChildService[] = [];
  apis: ChildService[] = [];
  apiPorts: number[] = [];
  client!: Client;

  get apiUrls(): string[] {
    return this.apiPorts.map((p) => `http://127.0.0.1:${p}`);
  }

  async start(): Promise<this> {
    try {
      this.cluster = await testCluster();
      this.nodes = await Promise.all(
        [1, 2, 3].map((i) =>
          startStorageNode(`cluster-node-${i}`, {
            port: 0,
            dataDir: path.join(this.tmpDir, `node-${i}`),
            keysFile: testNodeKeysFile(),
            echo: false,
          }),
        ),
      );
      this.apiPorts = [await freePort(), await freePort()];
      await Promise.all([0, 1].map((i) => this.startWorker(i)));
      await Promise.all([0, 1].map((i) => this.startApi(i)));
      this.client = new Client({ connection: await Connection.connect({ address: this.cluster.address }), namespace: 'default' });
      return this;
    } catch (err) {
      await this.stop().catch(() => undefined);
      throw err;
    }
  }

  private env(): NodeJS.ProcessEnv {
    return childEnv({
      HOST: '127.0.0.1',
      TEMPORAL_ADDRESS: this.cluster.address,
      TEMPORAL_TASK_QUEUE: this.taskQueue,
      API_TOKENS_FILE: this.tokensFile,
      STORAGE_NODES: this.nodes.map((n) => n.url).join(','),
      STORAGE_NODE_KEYS_FILE: testNodeKeysFile(),
      DATABASE_URL: this.cluster.databaseUrl,
      LOG_LEVEL: 'warn',
      RATE_LIMIT_PER_IP: '0',
      RATE_LIMIT_PER_WALLET: '0',
      RATE_LIMIT_PER_TOKEN: '0',
      RATE_LIMIT_AUTH_FAILURES_PER_IP: '0',
      SSE_MAX_STREAMS_PER_CLIENT: '100000',
      // Admission is counted on every prepare but refuses none here: its tests set their own bounds,
      // and the suite keeps more executions open than a worker's cache (docs/decisions/0082).
      CAPACITY_OPEN_RUNS: '100000',
      CAPACITY_PER_WALLET: '100000',
      WORKER_METRICS_PORT: '0',
    });
  }

  async startWorker(i: number): Promise<void> {
    this.workers[i] = startChildService(
      `cluster-worker-${i + 1}`,
      process.execPath,
      [...WORKER_NODE_ARGS, path.join(projectRoot, 'dist', 'worker', 'main.js')],
      {
        readyPattern: /worker polling task queue/,
        env: { ...this.env(), ...WORKER_PROCESS_ENV },
        echo: false,
      },
    );
    await this.workers[i].ready;
  }

  async startApi(i: number): Promise<void> {
    this.apis[i] = startChildService(`cluster-api-${i + 1}`, process.execPath, [path.join(projectRoot, 'dist', 'api', 'main.js')], {
      readyPattern: /"msg":"api listening"/,
      env: { ...this.env(), PORT: String(this.apiPorts[i]), OPERATOR_PORT: '0', LOG_LEVEL: 'info' },
      echo: false,
    });
    await this.apis[i].ready;
  }

  /** SIGKILL: no shutdown hooks run, as when a machine dies. */
  static async kill(service: ChildService | undefined): Promise<void> {
    if (!service || service.child.exitCode !== null || service.child.signalCode !== null) return;
    service.child.kill('SIGKILL');
    await service.exited;
  }

  async stop(): Promise<void> {
    for (const api of this.apis) await ClusterStack.kill(api);
    for (const worker of this.workers) await worker?.stop(5000);
    await this.client?.connection.close().catch(() => undefined);
    await Promise.all(this.nodes.map((n) => n.stop(2000)));
    rmSync(this.tmpDir, { recursive: true, force: true });
  }
}
