import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { projectRoot } from '../../../config/config';
import { startChildService, type ChildService } from '../child-service';
import { readDevServerSettings } from '../temporal-dev-server';
import { ensureNamespace } from './namespace';
import { databaseUrl, startPostgres, type PostgresEndpoint, type RunningPostgres } from './postgres';
import { createDatabase, setupTemporalSchemas } from './schema';
import { clusterTemplateEnv, startTemporalServer } from './temporal-server';
import type { ClusterSettings } from './settings';
import { childEnv } from '../../../config/child-env';

/** The Temporal half of the cluster: PostgreSQL, the server, its namespace, and the Web UI. */
export interface RunningTemporalCluster {
  readonly settings: ClusterSettings;
  /** The frontend, for TEMPORAL_ADDRESS. */
  readonly address: string;
  readonly uiUrl?: string;
  readonly postgres: RunningPostgres;
  /** DATABASE_URL of the service's own database on the same PostgreSQL server. */
  readonly databaseUrl: string;
  readonly server: ChildService;
  readonly ui?: ChildService;
  /** SIGTERM the Temporal server (SIGKILL after `graceMs`) and wait for it to exit. */
  stopServer(graceMs?: number): Promise<void>;
  /** Starts the Temporal server again (after stopServer) and waits for its frontend. */
  startServer(): Promise<void>;
  /** Stops the UI, the server, then PostgreSQL (fast shutdown). */
  stop(): Promise<void>;
}

/**
 * The folder of the pinned server, schema tool and UI binaries, built once into the per-user
 * cache by scripts/temporal-cluster-bin.sh (progress on stderr).
 */
export function clusterBinDir(): string {
  const script = path.join(projectRoot, 'scripts', 'temporal-cluster-bin.sh');
  return execFileSync('bash', [script], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
}

/**
 * Starts PostgreSQL (or takes the existing server), sets up Temporal's two databases and the
 * service's own, starts the Temporal server on them, registers the namespace with its retention
 * and search attributes (the same ones temporal-dev.yaml names), and the Web UI when
 * `settings.uiPort` is set. On failure, whatever came up is stopped again.
 */
export async function startTemporalCluster(
  binDir: string,
  settings: ClusterSettings,
  options: { echo?: boolean; log?: (line: string) => void } = {},
): Promise<RunningTemporalCluster> {
  const log = options.log ?? (() => undefined);
  const started: Array<() => Promise<void>> = [];
  const undo = async () => {
    for (const stop of started.reverse()) await stop().catch(() => undefined);
  };
  try {
    log(
      settings.postgres.kind === 'local'
        ? `starting PostgreSQL on ${settings.postgres.host}:${settings.postgres.port} (data ${path.relative(projectRoot, settings.postgres.dataDir) || settings.postgres.dataDir})`
        : `using PostgreSQL at ${settings.postgres.host}:${settings.postgres.port}`,
    );
    const postgres = await startPostgres(settings.postgres, path.join(settings.dataDir, 'pg-password'), { echo: options.echo, log });
    started.push(() => postgres.stop());

    log(`schema: ${settings.databases.temporal} and ${settings.databases.visibility} (temporal-sql-tool setup-schema / update-schema)`);
    await setupTemporalSchemas(binDir, postgres.endpoint, settings.databases);
    const serviceDb = await createDatabase(binDir, postgres.endpoint, settings.databases.service);
    log(`service database ${settings.databases.service}: ${serviceDb}`);

    log(
      `starting Temporal server v1.29.1 (frontend ${settings.bindIp}:${settings.temporal.frontendPort}, ${settings.temporal.historyShards} history shards)`,
    );
    let server = await startTemporalServer(binDir, settings, postgres.endpoint, { echo: options.echo });
    started.push(() => server.stop(15_000));
    const address = `${settings.bindIp}:${settings.temporal.frontendPort}`;
    const dev = readDevServerSettings();
    const ns = await ensureNamespace(address, settings.temporal.namespace, settings.temporal.retentionDays, dev.searchAttributes);
    log(
      `namespace ${settings.temporal.namespace}: ${ns} (retention ${settings.temporal.retentionDays} d; search attributes ${Object.keys(dev.searchAttributes).join(', ')})`,
    );

    let ui: ChildService | undefined;
    if (settings.uiPort !== undefined) {
      ui = startUi(binDir, settings, postgres.endpoint, options.echo ?? false);
      started.push(() => ui!.stop(5000));
      await ui.ready;
    }
    return {
      settings,
      address,
      uiUrl: settings.uiPort !== undefined ? `http://${settings.bindIp}:${settings.uiPort}` : undefined,
      postgres,
      databaseUrl: databaseUrl(postgres.endpoint, settings.databases.service),
      get server() {
        return server;
      },
      ui,
      stopServer: (graceMs = 15_000) => server.stop(graceMs),
      async startServer() {
        server = await startTemporalServer(binDir, settings, postgres.endpoint, { echo: options.echo });
      },
      async stop() {
        await ui?.stop(5000);
        await server.stop(15_000);
        await postgres.stop();
      },
    };
  } catch (err) {
    await undo();
    throw err;
  }
}

function startUi(binDir: string, settings: ClusterSettings, pg: PostgresEndpoint, echo: boolean): ChildService {
  return startChildService(
    'temporal-ui',
    path.join(binDir, 'temporal-ui-server'),
    ['--root', projectRoot, '--config', path.join('temporal-cluster', 'ui'), '--env', 'production', 'start'],
    {
      // ui-server v2.42.1 prints Echo's banner with the address once it listens.
      readyPattern: /http server started on/,
      env: childEnv(clusterTemplateEnv(settings, pg)),
      echo,
      readyTimeoutMs: 30_000,
    },
  );
}
