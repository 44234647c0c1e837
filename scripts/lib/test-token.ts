import fs from 'node:fs';
import path from 'node:path';
import {
  createWalletClient,
  defineChain,
  getContractAddress,
  http,
  publicActions,
  type Address,
  type Hash,
  type PublicClient,
  type WalletClient,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { ANVIL_DEV_ACCOUNT } from './anvil';
import { readArtifacts, type ContractName } from './solidity';

/** The test token `npm start` and `npm run cluster` deploy on their local chain: 6 decimals, the supply held by anvil's first account. */
export const TEST_TOKEN = { name: 'Test USD', symbol: 'tUSD', decimals: 6, supply: 10n ** 15n } as const;

/** A client that can send from an account and wait for receipts. */
export type DeployClient = WalletClient & Pick<PublicClient, 'waitForTransactionReceipt'>;

/** Deploys one of solidity/'s contracts from `client`'s account and waits for its receipt; answers its address. */
async function deploy(client: DeployClient, name: ContractName, args: unknown[]): Promise<Address> {
  const { abi, bytecode } = readArtifacts().contracts[name];
  const hash: Hash = await client.deployContract({ abi, bytecode, args, account: client.account!, chain: client.chain });
  const receipt = await client.waitForTransactionReceipt({ hash });
  if (receipt.status !== 'success' || !receipt.contractAddress) throw new Error(`deploying ${name} failed (${hash})`);
  return receipt.contractAddress;
}

/** Deploys a TestToken with the given name and symbol; its whole supply goes to the deployer. */
export function deployTestToken(
  client: DeployClient,
  token: { name: string; symbol: string; supply: bigint } = TEST_TOKEN,
): Promise<Address> {
  return deploy(client, 'TestToken', [token.name, token.symbol, token.supply]);
}

/** Deploys a Forwarder (value sent to it goes on to an address by an internal call). */
export function deployForwarder(client: DeployClient): Promise<Address> {
  return deploy(client, 'Forwarder', []);
}

/** The address a deployer's contract creation at `nonce` gets (to find an already deployed token again). */
export const createdAddress = (from: Address, nonce: number): Address => getContractAddress({ from, nonce: BigInt(nonce) });

/** The ABI of TestToken (transfer, balanceOf, the Transfer event). */
export const testTokenAbi = () => readArtifacts().contracts.TestToken.abi;
export const forwarderAbi = () => readArtifacts().contracts.Forwarder.abi;

/** Where a launcher remembers the test token it deployed on its local chain (the chain keeps its state across restarts). */
export const testTokenFile = (dataDir: string) => path.join(dataDir, 'test-token.json');

/**
 * The tUSD of the local chain at `rpcUrl`: the one deployed before (its address in `file`, code
 * still there) or a new one deployed from anvil's first dev account. Answers its address and the
 * DEPOSIT_TOKENS item that allows it.
 */
export async function ensureLocalTestToken(rpcUrl: string, file: string): Promise<{ address: Address; chain: string; allow: string }> {
  const client = createWalletClient({ account: privateKeyToAccount(ANVIL_DEV_ACCOUNT.privateKey), transport: http(rpcUrl) }).extend(
    publicActions,
  );
  const chainId = await client.getChainId();
  const chain = `evm:${chainId}`;
  let address: Address | undefined;
  try {
    const saved = JSON.parse(fs.readFileSync(file, 'utf8')) as { chain: string; address: Address };
    if (saved.chain === chain && (await client.getCode({ address: saved.address })) !== undefined) address = saved.address;
  } catch {
    address = undefined;
  }
  if (!address) {
    address = await deployTestToken(
      Object.assign(client, {
        chain: defineChain({
          id: chainId,
          name: chain,
          nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
          rpcUrls: { default: { http: [rpcUrl] } },
        }),
      }),
    );
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, JSON.stringify({ chain, address, symbol: TEST_TOKEN.symbol, decimals: TEST_TOKEN.decimals }) + '\n');
  }
  return { address, chain, allow: `${chain}:${address}=${TEST_TOKEN.symbol}:${TEST_TOKEN.decimals}` };
}

/** DEPOSIT_TOKENS with `item` added (unless it names that token already). */
export const withAllowedToken = (current: string | undefined, item: string): string => {
  const items = (current ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  const key = item.split('=')[0].toLowerCase();
  return items.some((s) => s.split('=')[0].toLowerCase() === key) ? items.join(',') : [...items, item].join(',');
};
