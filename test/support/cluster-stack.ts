import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { createToken } from '../../tokens/token-store';
import type { ChildService } from '../../scripts/lib/child-service';
import type { RunningTemporalCluster } from '../../scripts/lib/cluster/temporal-cluster';
import { launchStack, type LaunchedStack, type StackProcess } from '../../scripts/lib/stack/launch-stack';
import { killProcess } from '../../scripts/lib/stack/service-process';
import { STACK_SERVICE_SETTINGS } from '../../scripts/lib/stack/stack-settings';
import type { StorageNodeProcess } from '../../scripts/lib/storage-nodes';
import { testNodeKeysFile } from './node-keys';
import { freePort } from './ports';
import { testCluster } from './temporal-target';

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
  apiPorts: number[] = [];
  client!: Client;
  private launched?: LaunchedStack<StackProcess>;

  get nodes(): StorageNodeProcess[] {
    return this.launched?.nodes ?? [];
  }

  get workers(): ChildService[] {
    return this.launched?.workers ?? [];
  }

  get apis(): ChildService[] {
    return this.launched?.apis ?? [];
  }

  get apiUrls(): string[] {
    return this.apiPorts.map((p) => `http://127.0.0.1:${p}`);
  }

  async start(): Promise<this> {
    try {
      this.cluster = await testCluster();
      this.apiPorts = [await freePort(), await freePort()];
      this.launched = await launchStack({
        // The run's one cluster, shared: this stack never stops it.
        temporal: { address: this.cluster.address },
        nodes: {
          nodes: [1, 2, 3].map((i) => ({ port: 0, dataDir: path.join(this.tmpDir, `node-${i}`) })),
          keysFile: testNodeKeysFile(),
          name: (i) => `cluster-node-${i + 1}`,
          echo: false,
        },
        service: {
          env: {
            HOST: '127.0.0.1',
            TEMPORAL_TASK_QUEUE: this.taskQueue,
            API_TOKENS_FILE: this.tokensFile,
            DATABASE_URL: this.cluster.databaseUrl,
            LOG_LEVEL: 'warn',
            ...STACK_SERVICE_SETTINGS,
            // Its tests pin one copy per entry, like the shared stack's.
            STORAGE_REPLICAS: '1',
            WORKER_METRICS_PORT: '0',
          },
          workers: [{}, {}],
          apis: this.apiPorts.map((port) => ({ port, env: { OPERATOR_PORT: '0', LOG_LEVEL: 'info' } })),
          workerName: (i) => `cluster-worker-${i + 1}`,
          apiName: (i) => `cluster-api-${i + 1}`,
          echo: false,
        },
        graceMs: { services: 5000, nodes: 2000 },
      });
      this.client = new Client({ connection: await Connection.connect({ address: this.cluster.address }), namespace: 'default' });
      return this;
    } catch (err) {
      await this.stop().catch(() => undefined);
      throw err;
    }
  }

  async startWorker(i: number): Promise<void> {
    await this.launched!.startWorker(i);
  }

  async startApi(i: number): Promise<void> {
    await this.launched!.startApi(i);
  }

  /** SIGKILL: no shutdown hooks run, as when a machine dies. */
  static async kill(service: ChildService | undefined): Promise<void> {
    await killProcess(service);
  }

  async stop(): Promise<void> {
    for (const api of this.apis) await ClusterStack.kill(api);
    await this.client?.connection.close().catch(() => undefined);
    await this.launched?.stop();
    rmSync(this.tmpDir, { recursive: true, force: true });
  }
}
