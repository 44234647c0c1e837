import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { projectRoot } from '../../../config/config';
import { scriptSettings } from '../settings';

/** Where PostgreSQL is: a server this launcher runs (initdb on first use), or an existing one. */
export type PostgresTarget =
  | { kind: 'local'; dataDir: string; port: number; user: string; host: string }
  | { kind: 'external'; host: string; port: number; user: string; password: string };

/** temporal-cluster/cluster.yaml, resolved (paths absolute). Tests build one with free ports. */
export interface ClusterSettings {
  bindIp: string;
  postgres: PostgresTarget;
  databases: { temporal: string; visibility: string; service: string };
  temporal: {
    historyShards: number;
    frontendPort: number;
    frontendHttpPort: number;
    historyPort: number;
    matchingPort: number;
    workerPort: number;
    /** frontend, history, matching, worker */
    membershipPorts: [number, number, number, number];
    metricsPort: number;
    logLevel: string;
    namespace: string;
    retentionDays: number;
  };
  /** Undefined: no Web UI (tests). */
  uiPort?: number;
  apiPorts: number[];
  /** One per API: its operator endpoints (metrics, detailed readiness). */
  apiOperatorPorts: number[];
  workerMetricsPorts: number[];
  storageNodePorts: number[];
  /** data/cluster: the password file and the storage nodes' data live here. */
  dataDir: string;
}

export class ClusterSettingsError extends Error {}

/**
 * An existing PostgreSQL server named by `postgres://USER:PASSWORD@HOST:PORT` (the path, if any,
 * is ignored: the launcher creates its own databases there).
 */
export function parsePostgresUrl(raw: string): PostgresTarget {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ClusterSettingsError('CLUSTER_POSTGRES_URL must look like postgres://USER:PASSWORD@HOST:PORT');
  }
  if (!['postgres:', 'postgresql:'].includes(url.protocol) || !url.hostname || !url.username) {
    throw new ClusterSettingsError('CLUSTER_POSTGRES_URL must look like postgres://USER:PASSWORD@HOST:PORT');
  }
  return {
    kind: 'external',
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port: url.port ? Number(url.port) : 5432,
    user: decodeURIComponent(url.username),
    password: decodeURIComponent(url.password),
  };
}

/** Reads temporal-cluster/cluster.yaml; `postgresUrl` (CLUSTER_POSTGRES_URL) replaces the local server. */
export function readClusterSettings(
  postgresUrl: string | undefined = scriptSettings().CLUSTER_POSTGRES_URL,
  file = path.join(projectRoot, 'temporal-cluster', 'cluster.yaml'),
): ClusterSettings {
  const raw = parse(readFileSync(file, 'utf8')) ?? {};
  const dataDir = path.resolve(projectRoot, path.dirname(raw.postgres?.dataDir ?? 'data/cluster/pg'));
  const bindIp: string = raw.bindIp ?? '127.0.0.1';
  const postgres: PostgresTarget = postgresUrl
    ? parsePostgresUrl(postgresUrl)
    : {
        kind: 'local',
        dataDir: path.resolve(projectRoot, raw.postgres?.dataDir ?? 'data/cluster/pg'),
        port: raw.postgres?.port ?? 5442,
        user: raw.postgres?.user ?? 'temporal',
        host: bindIp,
      };
  const t = raw.temporal ?? {};
  const settings: ClusterSettings = {
    bindIp,
    postgres,
    databases: { temporal: 'temporal', visibility: 'temporal_visibility', service: 'intent_service', ...(raw.databases ?? {}) },
    temporal: {
      historyShards: t.historyShards,
      frontendPort: t.frontendPort,
      frontendHttpPort: t.frontendHttpPort,
      historyPort: t.historyPort,
      matchingPort: t.matchingPort,
      workerPort: t.workerPort,
      membershipPorts: t.membershipPorts,
      metricsPort: t.metricsPort,
      logLevel: t.logLevel ?? 'warn',
      namespace: t.namespace ?? 'default',
      retentionDays: t.retentionDays,
    },
    uiPort: raw.uiPort,
    apiPorts: raw.apiPorts ?? [],
    apiOperatorPorts: raw.apiOperatorPorts ?? [],
    workerMetricsPorts: raw.workerMetricsPorts ?? [],
    storageNodePorts: raw.storageNodePorts ?? [],
    dataDir,
  };
  checkSettings(settings, file);
  return settings;
}

/** Throws a ClusterSettingsError naming the first bad key. */
export function checkSettings(s: ClusterSettings, source = 'cluster settings'): void {
  const isPort = (p: unknown) => Number.isInteger(p) && (p as number) > 0 && (p as number) <= 65535;
  const ports: Record<string, unknown> = {
    'temporal.frontendPort': s.temporal.frontendPort,
    'temporal.frontendHttpPort': s.temporal.frontendHttpPort,
    'temporal.historyPort': s.temporal.historyPort,
    'temporal.matchingPort': s.temporal.matchingPort,
    'temporal.workerPort': s.temporal.workerPort,
    'temporal.metricsPort': s.temporal.metricsPort,
    ...Object.fromEntries((s.temporal.membershipPorts ?? []).map((p, i) => [`temporal.membershipPorts[${i}]`, p])),
  };
  for (const [key, value] of Object.entries(ports))
    if (!isPort(value)) throw new ClusterSettingsError(`${source}: ${key} must be a port, got ${value}`);
  // cluster_membership.rpc_port is a PostgreSQL smallint: the server dies at start on a higher port.
  for (const p of s.temporal.membershipPorts ?? [])
    if (p > 32767)
      throw new ClusterSettingsError(
        `${source}: temporal.membershipPorts must be below 32768 (the server keeps them in a smallint), got ${p}`,
      );
  if (s.temporal.membershipPorts?.length !== 4)
    throw new ClusterSettingsError(`${source}: temporal.membershipPorts needs 4 ports (frontend, history, matching, worker)`);
  if (!Number.isInteger(s.temporal.historyShards) || s.temporal.historyShards < 1)
    throw new ClusterSettingsError(`${source}: temporal.historyShards must be a positive integer`);
  if (!Number.isInteger(s.temporal.retentionDays) || s.temporal.retentionDays < 1)
    throw new ClusterSettingsError(`${source}: temporal.retentionDays must be a positive integer of days`);
  for (const p of [...s.apiPorts, ...s.apiOperatorPorts, ...s.workerMetricsPorts, ...s.storageNodePorts])
    if (!isPort(p)) throw new ClusterSettingsError(`${source}: ${p} is not a port`);
  if (s.apiOperatorPorts.length !== s.apiPorts.length)
    throw new ClusterSettingsError(`${source}: apiOperatorPorts needs one port per API (apiPorts lists ${s.apiPorts.length})`);
  if (s.uiPort !== undefined && !isPort(s.uiPort)) throw new ClusterSettingsError(`${source}: uiPort must be a port, got ${s.uiPort}`);
}

/**
 * The namespace's retention must cover `executionLingerSeconds`: a workflow lingers that long
 * after its last state, and a read in that time must still find it in Temporal.
 */
export function checkRetention(retentionDays: number, lingerSeconds: number): void {
  if (retentionDays * 86_400 < lingerSeconds) {
    throw new ClusterSettingsError(
      `temporal.retentionDays (${retentionDays}) must cover executionLingerSeconds (${lingerSeconds} s = ${(lingerSeconds / 86_400).toFixed(1)} days)`,
    );
  }
}
