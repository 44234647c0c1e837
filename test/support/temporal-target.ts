import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { readClusterSettings, type ClusterSettings } from '../../scripts/lib/cluster/settings';
import { clusterBinDir, startTemporalCluster, type RunningTemporalCluster } from '../../scripts/lib/cluster/temporal-cluster';
import { freePort } from './ports';
import { envSettings } from '../../config/settings';

/**
 * `TEST_TEMPORAL=cluster` (npm run test:cluster) runs the tests against the production topology's
 * Temporal: the server v1.29.1 on PostgreSQL with advanced visibility, as `npm run cluster` runs it,
 * on free ports and a PostgreSQL data directory of its own (or CLUSTER_POSTGRES_URL). Unset or
 * `dev`: each stack starts its own dev server (SQLite), as before.
 */
export const TEST_TEMPORAL: 'dev' | 'cluster' = envSettings().TEST_TEMPORAL ?? 'dev';

/** The shape the stacks use of a dev server (scripts/lib/temporal-dev-server.ts RunningDevServer). */
export interface TestTemporal {
  readonly address: string;
  stop(graceMs?: number): Promise<void>;
}

let clusterPromise: Promise<{ cluster: RunningTemporalCluster; tmpDir: string }> | undefined;

/** The one test cluster of this mocha run, started on first use; stopped by the root hook. */
export function testCluster(): Promise<RunningTemporalCluster> {
  clusterPromise ??= startTestCluster();
  return clusterPromise.then((c) => c.cluster);
}

async function startTestCluster(): Promise<{ cluster: RunningTemporalCluster; tmpDir: string }> {
  const tmpDir = mkdtempSync(path.join(os.tmpdir(), 'intent-service-cluster-'));
  // PostgreSQL runs as the `postgres` user when the tests run as root: it must reach its folder.
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
    `  [test cluster] Temporal server v1.29.1 on PostgreSQL at ${cluster.address}, ${settings.temporal.historyShards} history shards, up in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
  return { cluster, tmpDir };
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

/** Stops the test cluster, if one was started (root hook, after the stacks). */
export async function stopTestCluster(): Promise<void> {
  if (!clusterPromise) return;
  const started = await clusterPromise.catch(() => undefined);
  clusterPromise = undefined;
  if (!started) return;
  await started.cluster.stop();
  rmSync(started.tmpDir, { recursive: true, force: true });
}
