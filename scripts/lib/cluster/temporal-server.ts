import path from 'node:path';
import { waitForTemporal } from '../temporal-ready';
import { projectRoot } from '../../../config/config';
import { startChildService, type ChildService } from '../child-service';
import type { PostgresEndpoint } from './postgres';
import type { ClusterSettings } from './settings';
import { childEnv } from '../../../config/child-env';

/** The environment temporal-cluster/server/production.yaml and ui/production.yaml are rendered with. */
export function clusterTemplateEnv(s: ClusterSettings, pg: PostgresEndpoint): Record<string, string> {
  const t = s.temporal;
  return {
    CLUSTER_BIND_IP: s.bindIp,
    CLUSTER_LOG_LEVEL: t.logLevel,
    CLUSTER_HISTORY_SHARDS: String(t.historyShards),
    CLUSTER_DB_TEMPORAL: s.databases.temporal,
    CLUSTER_DB_VISIBILITY: s.databases.visibility,
    CLUSTER_PG_HOST: pg.host,
    CLUSTER_PG_PORT: String(pg.port),
    CLUSTER_PG_USER: pg.user,
    CLUSTER_PG_PASSWORD: pg.password,
    CLUSTER_METRICS_PORT: String(t.metricsPort),
    CLUSTER_FRONTEND_PORT: String(t.frontendPort),
    CLUSTER_FRONTEND_HTTP_PORT: String(t.frontendHttpPort),
    CLUSTER_HISTORY_PORT: String(t.historyPort),
    CLUSTER_MATCHING_PORT: String(t.matchingPort),
    CLUSTER_WORKER_PORT: String(t.workerPort),
    CLUSTER_FRONTEND_MEMBERSHIP_PORT: String(t.membershipPorts[0]),
    CLUSTER_HISTORY_MEMBERSHIP_PORT: String(t.membershipPorts[1]),
    CLUSTER_MATCHING_MEMBERSHIP_PORT: String(t.membershipPorts[2]),
    CLUSTER_WORKER_MEMBERSHIP_PORT: String(t.membershipPorts[3]),
    CLUSTER_DYNAMIC_CONFIG: path.join(projectRoot, 'temporal-cluster', 'server', 'dynamicconfig.yaml'),
    CLUSTER_NAMESPACE: t.namespace,
    CLUSTER_UI_PORT: String(s.uiPort ?? 0),
  };
}

/**
 * Starts the Temporal server (all four services in one process) on the rendered config and
 * resolves once its frontend answers GetSystemInfo (about 15 s from cold here).
 */
export async function startTemporalServer(
  binDir: string,
  s: ClusterSettings,
  pg: PostgresEndpoint,
  options: { echo?: boolean; readyTimeoutMs?: number } = {},
): Promise<ChildService> {
  const args = [
    '--root',
    projectRoot,
    '--config',
    path.join('temporal-cluster', 'server'),
    '--env',
    'production',
    '--allow-no-auth',
    'start',
  ];
  const service = startChildService('temporal-server', path.join(binDir, 'temporal-server'), args, {
    // No line the server prints means "ready" (it logs at warn): readiness is polled below.
    // `ready` never resolves; it rejects with the output's last lines if the server exits first.
    readyPattern: /(?!)/,
    env: childEnv(clusterTemplateEnv(s, pg)),
    echo: options.echo ?? false,
    readyTimeoutMs: options.readyTimeoutMs ?? 90_000,
  });
  const address = `${s.bindIp}:${s.temporal.frontendPort}`;
  try {
    await waitForFrontend(
      address,
      options.readyTimeoutMs ?? 90_000,
      () => service.child.exitCode !== null || service.child.signalCode !== null,
    );
  } catch (err) {
    await service.stop(5000);
    const exited = await service.ready.then(
      () => '',
      (e: Error) => e.message,
    );
    throw new Error(exited.includes('exited') ? exited : (err as Error).message);
  }
  return service;
}

/** Polls GetSystemInfo until the frontend at `address` answers. */
export function waitForFrontend(address: string, timeoutMs: number, gaveUp: () => boolean = () => false): Promise<void> {
  return waitForTemporal(address, (c) => c.workflowService.getSystemInfo({}), {
    timeoutMs,
    intervalMs: 500,
    gaveUp,
    what: 'the Temporal server',
  });
}
