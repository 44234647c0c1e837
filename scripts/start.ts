import { startBanner } from './lib/start-banner';
import path from 'node:path';
import { loadConfig, projectRoot } from '../config/config';
import { childEnv } from '../config/child-env';
import { envSettings } from '../config/read-settings';
import { createNodeKeysFile } from '../lib/node-keys-file';
import { LOCAL_NODE_PORTS, startStorageNode } from './lib/storage-nodes';
import { ANVIL_GAS_ACCOUNT, LOCAL_CHAIN_PORT, startLocalChain } from './lib/anvil';
import { writeGasAccountKeyOnce } from '../lib/gas-account-key';
import { ensureLocalTestToken, testTokenFile, TEST_TOKEN, withAllowedToken } from './lib/test-token';
import { Supervisor } from './lib/supervisor';
import { temporalBinary } from './lib/temporal-binary';
import { readDevServerSettings, startDevServer, type RunningDevServer } from './lib/temporal-dev-server';
import { SERVICE_PROCESS_ENV, WORKER_NODE_ARGS, WORKER_PROCESS_ENV } from './lib/service-env';

/**
 * `npm start`: the whole service on one machine, with embedded defaults. Starts (each only when
 * not configured to use an existing one) the Temporal dev server, three storage nodes, a local
 * anvil chain (a block a second, its state kept in data/anvil-state.json), then the
 * worker and the API, waits for each, prints the URLs, and on Ctrl-C / SIGTERM stops them in
 * reverse order. If any part dies, everything is stopped and the exit code is 1.
 */
async function main() {
  const config = loadConfig();
  const supervisor = new Supervisor('start');

  try {
    let temporalAddress = config.temporal.address;
    let uiUrl: string | undefined;
    if (!temporalAddress) {
      const settings = readDevServerSettings();
      supervisor.say(`starting Temporal dev server on ${settings.ip}:${settings.port} (database ${settings.dbFilename ?? 'in memory'})`);
      const dev: RunningDevServer = await startDevServer(temporalBinary(), settings);
      supervisor.add('temporal', () => dev.stop(), new Promise((r) => dev.child.once('exit', r)));
      temporalAddress = dev.address;
      uiUrl = dev.uiUrl;
    }

    let storageNodes = config.storageNodes;
    const keysFile = config.storageNodeKeysFile;
    if (!storageNodes) {
      // The nodes are ours: so is their key. Nodes configured elsewhere come with their own keys file.
      if (createNodeKeysFile(keysFile)) supervisor.say(`created the storage node keys file ${keysFile}`);
      const nodes = await Promise.all(
        LOCAL_NODE_PORTS.map((port, i) =>
          startStorageNode(`storage-node-${i + 1}`, { port, dataDir: path.join(projectRoot, 'data', `storage-node-${i + 1}`), keysFile }),
        ),
      );
      for (const node of nodes) supervisor.add(node.name, () => node.stop(), node.exited);
      storageNodes = nodes.map((n) => n.url);
    }

    let chainUrl = config.chain?.rpcUrl;
    let testToken: { address: string; allow: string } | undefined;
    let gasKeyFile: string | undefined;
    if (!chainUrl) {
      const stateFile = path.join(projectRoot, 'data', 'anvil-state.json');
      supervisor.say(`starting a local anvil chain on 127.0.0.1:${LOCAL_CHAIN_PORT} (state ${stateFile})`);
      const anvil = await startLocalChain(stateFile);
      supervisor.add('anvil', () => anvil.stop(10_000), anvil.exited);
      chainUrl = anvil.url;
      // Our chain: its test token, deployed once (the chain keeps its state) and allowed.
      testToken = await ensureLocalTestToken(chainUrl, testTokenFile(path.join(projectRoot, 'data')));
      // Our chain: token refunds' fees are paid by anvil's second dev account, unless told otherwise.
      if (config.refunds.gasKeyFile === undefined) {
        gasKeyFile = path.join(projectRoot, 'data', 'gas-account.key');
        writeGasAccountKeyOnce(gasKeyFile, ANVIL_GAS_ACCOUNT.privateKey);
      }
    }

    const env = childEnv(
      {
        TEMPORAL_ADDRESS: temporalAddress,
        STORAGE_NODES: storageNodes.join(','),
        STORAGE_NODE_KEYS_FILE: keysFile,
        CHAIN_RPC_URL: chainUrl,
        ...(testToken ? { DEPOSIT_TOKENS: withAllowedToken(envSettings().DEPOSIT_TOKENS, testToken.allow) } : {}),
        ...(gasKeyFile ? { REFUND_GAS_KEY_FILE: gasKeyFile } : {}),
      },
      SERVICE_PROCESS_ENV,
    );
    const worker = supervisor.startScript('worker', 'worker/main.js', /worker polling task queue/, {
      nodeArgs: WORKER_NODE_ARGS,
      env: { ...WORKER_PROCESS_ENV, ...env },
    });
    const workerVersion = versionOf((await worker.ready).input);
    const api = supervisor.startScript('api', 'api/main.js', /"msg":"api listening"/, { env });
    await api.ready;

    const apiUrl = `http://${config.host}:${config.port}`;
    const banner = startBanner({
      apiUrl,
      operator: config.operator,
      temporalAddress,
      namespace: config.temporal.namespace,
      taskQueue: config.temporal.taskQueue,
      uiUrl,
      workerVersion,
      promote: config.workerDeployment?.promote,
      storageNodes,
      chainUrl,
      depositSeedFile: config.depositSeedFile,
      testToken: testToken && { symbol: TEST_TOKEN.symbol, address: testToken.address },
      gasAccount: gasKeyFile === undefined ? undefined : { address: ANVIL_GAS_ACCOUNT.address, keyFile: gasKeyFile },
      keysFile,
      tokensFile: config.apiTokensFile,
    });
    process.stdout.write(['', ...banner, ''].join('\n'));
  } catch (err) {
    await supervisor.failed(err);
  }
}

/** The Worker Deployment version in the worker's ready line (a JSON log line), if it has one. */
function versionOf(line: string): { deploymentName: string; buildId: string } | undefined {
  try {
    return (JSON.parse(line) as { version?: { deploymentName: string; buildId: string } }).version;
  } catch {
    return undefined;
  }
}

void main();
