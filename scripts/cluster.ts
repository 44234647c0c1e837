import path from 'node:path';
import { loadConfig, projectRoot } from '../config/config';
import { childEnv } from '../config/child-env';
import { envSettings } from '../config/read-settings';
import { PostgresMissingError, postgresBinDir } from './lib/cluster/postgres';
import { ClusterSettingsError, checkRetention, readClusterSettings } from './lib/cluster/settings';
import { clusterBinDir, startTemporalCluster } from './lib/cluster/temporal-cluster';
import { LOCAL_CHAIN_PORT, startLocalChain } from './lib/anvil';
import { ensureLocalTestToken, testTokenFile, TEST_TOKEN, withAllowedToken } from './lib/test-token';
import { SERVICE_PROCESS_ENV, WORKER_NODE_ARGS, WORKER_PROCESS_ENV } from './lib/service-env';
import { startStorageNode } from './lib/storage-nodes';
import { Supervisor } from './lib/supervisor';
import { createNodeKeysFile } from '../lib/node-keys-file';

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
    if (createNodeKeysFile(keysFile)) say(`created the storage node keys file ${keysFile}`);
    const nodes = await Promise.all(
      settings.storageNodePorts.map((port, i) =>
        startStorageNode(`storage-node-${i + 1}`, { port, dataDir: path.join(settings.dataDir, `storage-node-${i + 1}`), keysFile }),
      ),
    );
    for (const node of nodes) supervisor.add(node.name, () => node.stop(), node.exited);

    let chainUrl = config.chain?.rpcUrl;
    let testToken: { address: string; allow: string } | undefined;
    if (!chainUrl) {
      const stateFile = path.join(settings.dataDir, 'anvil-state.json');
      say(`starting a local anvil chain on 127.0.0.1:${LOCAL_CHAIN_PORT} (state ${stateFile})`);
      const anvil = await startLocalChain(stateFile);
      supervisor.add('anvil', () => anvil.stop(10_000), anvil.exited);
      chainUrl = anvil.url;
      // Our chain: its test token, deployed once (the chain keeps its state) and allowed.
      testToken = await ensureLocalTestToken(chainUrl, testTokenFile(settings.dataDir));
    }

    // Every worker asks for the chain's watcher; its fixed workflow id makes one run.
    const env = childEnv(
      {
        CHAIN_RPC_URL: chainUrl,
        ...(testToken ? { DEPOSIT_TOKENS: withAllowedToken(envSettings().DEPOSIT_TOKENS, testToken.allow) } : {}),
        TEMPORAL_ADDRESS: temporal.address,
        TEMPORAL_NAMESPACE: settings.temporal.namespace,
        STORAGE_NODES: nodes.map((n) => n.url).join(','),
        STORAGE_NODE_KEYS_FILE: keysFile,
        DATABASE_URL: temporal.databaseUrl,
      },
      SERVICE_PROCESS_ENV,
    );
    const workers = settings.workerMetricsPorts.map((port, i) =>
      supervisor.startScript(`worker-${i + 1}`, 'worker/main.js', /worker polling task queue/, {
        nodeArgs: WORKER_NODE_ARGS,
        env: { ...env, ...WORKER_PROCESS_ENV, WORKER_METRICS_PORT: String(port), OPERATOR_HOST: settings.bindIp },
      }),
    );
    await Promise.all(workers.map((w) => w.ready));
    const apis = settings.apiPorts.map((port, i) =>
      supervisor.startScript(`api-${i + 1}`, 'api/main.js', /"msg":"api listening"/, {
        env: {
          ...env,
          PORT: String(port),
          HOST: settings.bindIp,
          OPERATOR_PORT: String(settings.apiOperatorPorts[i]),
          OPERATOR_HOST: settings.bindIp,
        },
      }),
    );
    await Promise.all(apis.map((a) => a.ready));

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
