import { getContractAddress, type Address, type Hash, type PublicClient, type WalletClient } from 'viem';
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
