import { testSettings } from './settings';
import type { RunningTemporalCluster } from '../../scripts/lib/cluster/temporal-cluster';
import { startThrowawayCluster, type ThrowawayCluster } from '../../scripts/lib/cluster/throwaway-cluster';

/**
 * `TEST_TEMPORAL=cluster` (npm run test:cluster) runs the tests against the production topology's
 * Temporal: the server v1.29.1 on PostgreSQL with advanced visibility, as `npm run cluster` runs it,
 * on free ports and a PostgreSQL data directory of its own (or CLUSTER_POSTGRES_URL). Unset or
 * `dev`: each stack starts its own dev server (SQLite), as before.
 */
export const TEST_TEMPORAL: 'dev' | 'cluster' = testSettings().TEST_TEMPORAL ?? 'dev';

/** The shape the stacks use of a dev server (scripts/lib/temporal-dev-server.ts RunningDevServer). */
export interface TestTemporal {
  readonly address: string;
  stop(graceMs?: number): Promise<void>;
}

let clusterPromise: Promise<ThrowawayCluster> | undefined;

/** The one test cluster of this mocha run, started on first use; stopped by the root hook. */
export function testCluster(): Promise<RunningTemporalCluster> {
  clusterPromise ??= startThrowawayCluster('test cluster');
  return clusterPromise.then((c) => c.cluster);
}

/** Stops the test cluster, if one was started (root hook, after the stacks). */
export async function stopTestCluster(): Promise<void> {
  if (!clusterPromise) return;
  const started = await clusterPromise.catch(() => undefined);
  clusterPromise = undefined;
  if (!started) return;
  await started.stop();
}
