import { parseArgs } from 'node:util';
import { createPublicClient, createWalletClient, defineChain, http, isAddress, publicActions } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { envSettings } from '../config/settings';
import { WEI } from '../domain/wei';
import { ANVIL_DEV_ACCOUNT } from './lib/anvil';

const USAGE = `usage: npm run --silent deposit -- --to ADDRESS --amount WEI
sends WEI from anvil's first funded dev account to ADDRESS on CHAIN_RPC_URL (default: the chain
npm start runs, http://127.0.0.1:8545), waits for its block and prints {"txHash","blockNumber","to","amount"}`;

/** Dev tool: a real native transfer on the local chain, as a customer's wallet would send to a deposit address. */
async function main(): Promise<number> {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    strict: true,
    options: { to: { type: 'string' }, amount: { type: 'string' } },
  });
  if (!values.to || !isAddress(values.to) || !values.amount || !WEI.test(values.amount)) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const rpcUrl = envSettings().CHAIN_RPC_URL ?? DEFAULT_RPC_URL;
  const chainId = await createPublicClient({ transport: http(rpcUrl) }).getChainId();
  const chain = defineChain({
    id: chainId,
    name: `evm:${chainId}`,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
  const client = createWalletClient({ account: privateKeyToAccount(ANVIL_DEV_ACCOUNT.privateKey), chain, transport: http(rpcUrl) }).extend(
    publicActions,
  );
  const txHash = await client.sendTransaction({ to: values.to, value: BigInt(values.amount) });
  const receipt = await client.waitForTransactionReceipt({ hash: txHash });
  process.stdout.write(
    JSON.stringify({ txHash, blockNumber: Number(receipt.blockNumber), to: values.to, amount: values.amount, chain: `evm:${chainId}` }) +
      '\n',
  );
  return receipt.status === 'success' ? 0 : 1;
}

/** Where `npm start` runs its anvil chain. */
export const DEFAULT_RPC_URL = 'http://127.0.0.1:8545';

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    process.stderr.write(`deposit failed: ${err.message.split('\n')[0]}\n`);
    process.exit(1);
  },
);
