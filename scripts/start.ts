import path from 'node:path';
import { loadConfig, projectRoot } from '../config/config';
import { envSettings } from '../config/read-settings';
import { writeGasAccountKeyOnce } from '../lib/gas-account-key';
import { ANVIL_GAS_ACCOUNT } from './lib/anvil';
import { readModelHoldsAddresses } from './lib/deposit-keys';
import { launchStack } from './lib/stack/launch-stack';
import { startBanner } from './lib/start-banner';
import { LOCAL_NODE_PORTS } from './lib/storage-nodes';
import { Supervisor } from './lib/supervisor';
import { readDevServerSettings } from './lib/temporal-dev-server';
import { ensureLocalTestToken, testTokenFile, TEST_TOKEN, withAllowedToken } from './lib/test-token';

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
    const data = path.join(projectRoot, 'data');
    const keysFile = config.storageNodeKeysFile;
    let testToken: { address: string; allow: string } | undefined;
    let gasKeyFile: string | undefined;
    const stack = await launchStack({
      temporal: config.temporal.address ? { address: config.temporal.address } : { devServer: { port: readDevServerSettings().port } },
      // The nodes are ours: so is their key. Nodes configured elsewhere come with their own keys file.
      ...(config.storageNodes
        ? {}
        : {
            nodes: {
              nodes: LOCAL_NODE_PORTS.map((port, i) => ({ port, dataDir: path.join(data, `storage-node-${i + 1}`) })),
              keysFile,
              createKeysFile: true,
            },
          }),
      ...(config.chain?.rpcUrl
        ? {}
        : {
            chain: {
              stateFile: path.join(data, 'anvil-state.json'),
              prepare: async (chainUrl: string) => {
                // Our chain: its test token, deployed once (the chain keeps its state) and allowed.
                testToken = await ensureLocalTestToken(chainUrl, testTokenFile(data));
                // Our chain: token refunds' fees are paid by anvil's second dev account, unless told otherwise.
                if (config.refunds.gasKeyFile === undefined) {
                  gasKeyFile = path.join(data, 'gas-account.key');
                  writeGasAccountKeyOnce(gasKeyFile, ANVIL_GAS_ACCOUNT.privateKey);
                }
                return {
                  DEPOSIT_TOKENS: withAllowedToken(envSettings().DEPOSIT_TOKENS, testToken.allow),
                  ...(gasKeyFile ? { REFUND_GAS_KEY_FILE: gasKeyFile } : {}),
                };
              },
            },
          }),
      // The seed is made the first time only: gone while the read model holds addresses, npm start refuses.
      depositKeys: {
        seedFile: config.depositSeedFile,
        xpubFile: config.depositXpubFile,
        holdsAddresses: () => readModelHoldsAddresses(config.database),
      },
      service: {
        env: {
          ...(config.storageNodes ? { STORAGE_NODES: config.storageNodes.join(','), STORAGE_NODE_KEYS_FILE: keysFile } : {}),
          ...(config.chain?.rpcUrl ? { CHAIN_RPC_URL: config.chain.rpcUrl } : {}),
        },
        workers: [{}],
        apis: [{ port: config.port }],
        workerName: () => 'worker',
        apiName: () => 'api',
      },
      // The supervisor stops each part in reverse order, on Ctrl-C or when one dies or fails to start.
      onStarted: (part) => supervisor.add(part.name, part.stop, part.exited),
      stopOnFailure: false,
      log: (line) => supervisor.say(line),
    });
    const temporalAddress = stack.temporal.address;
    const uiUrl = stack.temporal.uiUrl;
    const storageNodes = config.storageNodes ?? stack.nodeUrls();
    const chainUrl = stack.chain?.url ?? config.chain!.rpcUrl;
    const workerVersion = versionOf(stack.workers[0].readyLine);

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
