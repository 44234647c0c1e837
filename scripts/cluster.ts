import path from 'node:path';
import { readModelHoldsAddresses } from './lib/deposit-keys';
import { loadConfig, projectRoot } from '../config/config';
import { envSettings } from '../config/read-settings';
import { PostgresMissingError, postgresBinDir } from './lib/cluster/postgres';
import { ClusterSettingsError, checkRetention, readClusterSettings } from './lib/cluster/settings';
import { clusterBinDir, startTemporalCluster } from './lib/cluster/temporal-cluster';
import { launchStack } from './lib/stack/launch-stack';
import { ensureLocalTestToken, testTokenFile, TEST_TOKEN, withAllowedToken } from './lib/test-token';
import { Supervisor } from './lib/supervisor';

/**
 * `npm run cluster`: the production topology on one machine (temporal-cluster/cluster.yaml):
 * PostgreSQL (data/cluster/pg, initdb on first run; or CLUSTER_POSTGRES_URL), the Temporal server
 * v1.29.1 on it with advanced visibility, the namespace and search attributes, the Web UI, three
 * storage nodes, two workers and two APIs. Ctrl-C / SIGTERM stops everything in reverse order;
 * if any part dies, everything is stopped and the exit code is 1.
 */
async function main() {
  const config = loadConfig();
  const settings = readClusterSettings();
  checkRetention(settings.temporal.retentionDays, config.executionLingerSeconds);
  // Before building or starting anything: no PostgreSQL to run and none named is one line.
  if (settings.postgres.kind === 'local') postgresBinDir();
  const binDir = clusterBinDir();

  const supervisor = new Supervisor('cluster');
  const say = (line: string) => supervisor.say(line);

  try {
    const temporal = await startTemporalCluster(binDir, settings, { log: say });
    // Stopped as one part, in its own order (UI, server, PostgreSQL); each process is watched.
    supervisor.add('Temporal server, Web UI and PostgreSQL', () => temporal.stop());
    for (const [name, service] of [
      ['PostgreSQL', temporal.postgres.service],
      ['Temporal server', temporal.server],
      ['Temporal UI', temporal.ui],
    ] as const) {
      if (service) supervisor.watch(name, service.exited);
    }

    const keysFile = config.storageNodeKeysFile;
    let testToken: { address: string; allow: string } | undefined;
    // Every worker asks for the chain's watcher; its fixed workflow id makes one run.
    const stack = await launchStack({
      temporal: { address: temporal.address },
      nodes: {
        nodes: settings.storageNodePorts.map((port, i) => ({ port, dataDir: path.join(settings.dataDir, `storage-node-${i + 1}`) })),
        keysFile,
        createKeysFile: true,
      },
      ...(config.chain?.rpcUrl
        ? {}
        : {
            chain: {
              stateFile: path.join(settings.dataDir, 'anvil-state.json'),
              // Our chain: its test token, deployed once (the chain keeps its state) and allowed.
              prepare: async (chainUrl: string) => {
                testToken = await ensureLocalTestToken(chainUrl, testTokenFile(settings.dataDir));
                return { DEPOSIT_TOKENS: withAllowedToken(envSettings().DEPOSIT_TOKENS, testToken.allow) };
              },
            },
          }),
      depositKeys: {
        seedFile: config.depositSeedFile,
        xpubFile: config.depositXpubFile,
        holdsAddresses: () =>
          readModelHoldsAddresses({ url: temporal.databaseUrl, sqliteFile: path.join(settings.dataDir, 'unused.sqlite') }),
      },
      service: {
        env: {
          ...(config.chain?.rpcUrl ? { CHAIN_RPC_URL: config.chain.rpcUrl } : {}),
          TEMPORAL_NAMESPACE: settings.temporal.namespace,
          DATABASE_URL: temporal.databaseUrl,
        },
        workers: settings.workerMetricsPorts.map((port) => ({ WORKER_METRICS_PORT: String(port), OPERATOR_HOST: settings.bindIp })),
        apis: settings.apiPorts.map((port, i) => ({
          port,
          env: { HOST: settings.bindIp, OPERATOR_PORT: String(settings.apiOperatorPorts[i]), OPERATOR_HOST: settings.bindIp },
        })),
      },
      // The supervisor stops each part in reverse order, on Ctrl-C or when one dies or fails to start.
      onStarted: (part) => supervisor.add(part.name, part.stop, part.exited),
      stopOnFailure: false,
      log: say,
    });
    const nodes = stack.nodes;
    const chainUrl = stack.chain?.url ?? config.chain!.rpcUrl;

    const apiUrls = settings.apiPorts.map((p) => `http://${settings.bindIp}:${p}`);
    const pg = temporal.postgres.endpoint;
    process.stdout.write(
      [
        '',
        'intent-service cluster is up',
        ...apiUrls.map(
          (url, i) =>
            `  API ${i + 1}         ${url}   (try: curl ${url}/readyz; operator: http://${settings.bindIp}:${settings.apiOperatorPorts[i]}/metrics)`,
        ),
        `  workers       ${settings.workerMetricsPorts.length}, metrics ${settings.workerMetricsPorts.map((p) => `http://${settings.bindIp}:${p}/metrics`).join(' ')}`,
        `  Temporal      ${temporal.address}   namespace ${settings.temporal.namespace}, task queue ${config.temporal.taskQueue}, ${settings.temporal.historyShards} history shards`,
        `  Temporal UI   ${temporal.uiUrl ?? '(off)'}`,
        `  server metrics http://${settings.bindIp}:${settings.temporal.metricsPort}/metrics`,
        `  PostgreSQL    ${pg.host}:${pg.port} user ${pg.user}${settings.postgres.kind === 'local' ? ` (password in ${path.relative(projectRoot, path.join(settings.dataDir, 'pg-password'))})` : ''}; databases ${Object.values(settings.databases).join(', ')}`,
        `  storage nodes ${nodes.map((n) => n.url).join(' ')}`,
        `  chain         ${chainUrl}   (one watcher for all workers: chain-watcher:evm:<chainId>)`,
        ...(testToken
          ? [
              `  token ${TEST_TOKEN.symbol}    ${testToken.address}   (deposits: npm run --silent deposit -- --to ADDRESS --amount N --token ${TEST_TOKEN.symbol})`,
            ]
          : []),
        `  node keys     ${keysFile}`,
        `  tokens        ${config.apiTokensFile}   (npm run --silent token -- create --id NAME --scope SCOPE)`,
        'Ctrl-C stops everything.',
        '',
      ].join('\n'),
    );
  } catch (err) {
    await supervisor.failed(err);
  }
}

main().catch((err) => {
  // Settings and a missing PostgreSQL are one line, before anything started.
  if (err instanceof PostgresMissingError || err instanceof ClusterSettingsError) process.stderr.write(`[cluster] ${err.message}\n`);
  else process.stderr.write(`[cluster] failed: ${(err as Error).message}\n`);
  process.exit(1);
});
