import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../../config/free-port';
import { readClusterSettings, type ClusterSettings } from './settings';
import { clusterBinDir, startTemporalCluster, type RunningTemporalCluster } from './temporal-cluster';

export interface ThrowawayCluster {
  readonly cluster: RunningTemporalCluster;
  /** Stops the cluster and removes its folder. */
  stop(): Promise<void>;
}

/**
 * The production topology's Temporal (`npm run cluster`'s server v1.29.1 on PostgreSQL with
 * advanced visibility, its shard count and namespace) on free ports, with a PostgreSQL data folder
 * of its own in a temp folder (or, with CLUSTER_POSTGRES_URL, databases of its own there): for the
 * tests (`TEST_TEMPORAL=cluster`) and `npm run bench -- --temporal cluster`.
 */
export async function startThrowawayCluster(label: string): Promise<ThrowawayCluster> {
  const tmpDir = mkdtempSync(path.join(os.tmpdir(), 'intent-service-cluster-'));
  // PostgreSQL runs as the `postgres` user when this runs as root: it must reach its folder.
  chmodSync(tmpDir, 0o711);
  const shipped = readClusterSettings();
  const [frontend, http, history, matching, worker, metrics] = await Promise.all(Array.from({ length: 6 }, () => freePort()));
  const membership: number[] = [];
  while (membership.length < 4) {
    const port = await freeSmallPort();
    if (!membership.includes(port)) membership.push(port);
  }
  const postgres: ClusterSettings['postgres'] =
    shipped.postgres.kind === 'external'
      ? shipped.postgres
      : { ...shipped.postgres, dataDir: path.join(tmpDir, 'pg'), port: await freePort() };
  const suffix = shipped.postgres.kind === 'external' ? `_test_${process.pid}` : '';
  const settings: ClusterSettings = {
    ...shipped,
    postgres,
    databases: { temporal: `temporal${suffix}`, visibility: `temporal_visibility${suffix}`, service: `intent_service${suffix}` },
    temporal: {
      ...shipped.temporal,
      frontendPort: frontend,
      frontendHttpPort: http,
      historyPort: history,
      matchingPort: matching,
      workerPort: worker,
      metricsPort: metrics,
      membershipPorts: membership as [number, number, number, number],
      logLevel: 'error',
    },
    uiPort: undefined,
    apiPorts: [],
    apiOperatorPorts: [],
    workerMetricsPorts: [],
    storageNodePorts: [],
    dataDir: tmpDir,
  };
  const started = Date.now();
  // startTemporalCluster stops what it started when it fails; the folder goes here.
  const cluster = await startTemporalCluster(clusterBinDir(), settings).catch((err) => {
    rmSync(tmpDir, { recursive: true, force: true });
    throw err;
  });
  console.log(
    `  [${label}] Temporal server v1.29.1 on PostgreSQL at ${cluster.address}, ${settings.temporal.historyShards} history shards, up in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
  return {
    cluster,
    stop: async () => {
      await cluster.stop();
      rmSync(tmpDir, { recursive: true, force: true });
    },
  };
}

/**
 * A free port below 32768: the server stores each membership port in a PostgreSQL smallint
 * (cluster_membership.rpc_port), so an ephemeral port (32768 and up, what port 0 gives) fails
 * its start with "value out of range for type smallint".
 */
function freeSmallPort(): Promise<number> {
  const tryPort = (port: number) =>
    new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
  return (async () => {
    for (;;) {
      const port = 20_000 + Math.floor(Math.random() * 12_000);
      if (await tryPort(port)) return port;
    }
  })();
}
