import { parseArgs } from 'node:util';
import { createPublicClient, createWalletClient, defineChain, http, isAddress, publicActions } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { envSettings } from '../config/read-settings';
import { WEI } from '../domain/wei';
import { ANVIL_DEV_ACCOUNT } from './lib/anvil';
import { deployForwarder, forwarderAbi, testTokenAbi, testTokenFile } from './lib/test-token';
import { parseDepositTokens } from '../config/deposit-tokens';
import { projectRoot } from '../config/config';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const USAGE = `usage: npm run --silent deposit -- --to ADDRESS --amount N [--token SYMBOL | --from-contract]
sends N from anvil's first funded dev account to ADDRESS on CHAIN_RPC_URL (default: the chain
npm start runs, http://127.0.0.1:8545), waits for its block and prints {"txHash","blockNumber","to","amount","asset"}:
  N wei of the native coin, a top-level transfer;
  --token SYMBOL   N base units of that token (DEPOSIT_TOKENS, else the tUSD npm start deployed), an ERC-20 transfer;
  --from-contract  N wei through a Forwarder contract it deploys: the payment is an internal call, as a contract wallet's`;

/** Dev tool: a real native transfer on the local chain, as a customer's wallet would send to a deposit address. */
async function main(): Promise<number> {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    strict: true,
    options: { to: { type: 'string' }, amount: { type: 'string' }, token: { type: 'string' }, 'from-contract': { type: 'boolean' } },
  });
  if (!values.to || !isAddress(values.to) || !values.amount || !WEI.test(values.amount) || (values.token && values['from-contract'])) {
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
  const amount = BigInt(values.amount);
  let asset = 'native';
  let txHash: `0x${string}`;
  if (values.token) {
    const token = tokenBySymbol(`evm:${chainId}`, values.token);
    asset = `erc20:${token.toLowerCase()}`;
    txHash = await client.writeContract({ address: token, abi: testTokenAbi(), functionName: 'transfer', args: [values.to, amount] });
  } else if (values['from-contract']) {
    const forwarder = await deployForwarder(client);
    txHash = await client.writeContract({
      address: forwarder,
      abi: forwarderAbi(),
      functionName: 'forward',
      args: [values.to],
      value: amount,
    });
  } else txHash = await client.sendTransaction({ to: values.to, value: amount });
  const receipt = await client.waitForTransactionReceipt({ hash: txHash });
  process.stdout.write(
    JSON.stringify({
      txHash,
      blockNumber: Number(receipt.blockNumber),
      to: values.to,
      amount: values.amount,
      asset,
      chain: `evm:${chainId}`,
    }) + '\n',
  );
  return receipt.status === 'success' ? 0 : 1;
}

/** The address of the token `symbol` on `chain`: DEPOSIT_TOKENS's, else the test token npm start deployed (data/test-token.json). */
function tokenBySymbol(chain: string, symbol: string): `0x${string}` {
  const listed = parseDepositTokens(envSettings().DEPOSIT_TOKENS).find((t) => t.chain === chain && t.symbol === symbol);
  if (listed) return listed.address as `0x${string}`;
  try {
    const saved = JSON.parse(readFileSync(testTokenFile(path.join(projectRoot, 'data')), 'utf8')) as {
      chain: string;
      address: `0x${string}`;
      symbol: string;
    };
    if (saved.chain === chain && saved.symbol === symbol) return saved.address;
  } catch {
    // no test token deployed here
  }
  throw new Error(`no token ${symbol} on ${chain}: DEPOSIT_TOKENS names none, and npm start deployed none`);
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
