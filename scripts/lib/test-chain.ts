import { createTestClient, http, publicActions, walletActions, type Address, type Hash, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { foundry } from 'viem/chains';
import { ANVIL_DEV_ACCOUNT, startAnvil, type AnvilProcess } from './anvil';
import { readArtifacts, type ContractName } from './solidity';

/**
 * A real anvil chain for a test file, with automine off: a test sends transfers (they wait in the
 * pool), then mines the blocks it wants, takes snapshots and reverts to them (a reorg: the blocks
 * after the snapshot are replaced by the ones mined next).
 */
export class TestChain {
  private constructor(
    readonly anvil: AnvilProcess,
    readonly client: ReturnType<typeof testClient>,
  ) {}

  /** `extraArgs`: more anvil flags. */
  static async start(extraArgs: string[] = []): Promise<TestChain> {
    const anvil = await startAnvil({ port: 0, extraArgs });
    const chain = new TestChain(anvil, testClient(anvil.url));
    await chain.client.setAutomine(false);
    return chain;
  }

  get url(): string {
    return this.anvil.url;
  }

  async head(): Promise<number> {
    return Number(await this.client.getBlockNumber({ cacheTime: 0 }));
  }

  /**
   * Sends `value` wei from `account` (anvil's first dev account unless told; anvil's dev accounts
   * are unlocked, the node picks the nonce); the transfer waits in the pool until a block is mined.
   */
  send(to: string, value: bigint, account: Address = ANVIL_DEV_ACCOUNT.address): Promise<Hash> {
    return this.client.sendTransaction({ account, to: to as Address, value, chain: foundry });
  }

  /** Deploys a TestToken (solidity/) whose supply goes to anvil's first dev account; mines its block. */
  async deployToken(name: string, symbol: string): Promise<Address> {
    return this.deploy('TestToken', [name, symbol, 10n ** 15n]);
  }

  /** Deploys a Forwarder (value sent to it goes on by an internal call); mines its block. */
  async deployForwarder(): Promise<Address> {
    return this.deploy('Forwarder', []);
  }

  private async deploy(name: ContractName, args: unknown[]): Promise<Address> {
    const { abi, bytecode } = readArtifacts().contracts[name];
    const hash = await this.client.deployContract({ abi, bytecode, args, account: ANVIL_DEV_ACCOUNT.address, chain: foundry });
    await this.mine(1);
    const receipt = await this.client.getTransactionReceipt({ hash });
    // A deploy that runs out of gas (a block gas limit below its cost) still names an address, with no code at it.
    if (receipt.status !== 'success' || !receipt.contractAddress)
      throw new Error(`${name} was not deployed: ${receipt.status}, ${receipt.gasUsed} gas used`);
    return receipt.contractAddress;
  }

  /** Sends `amount` base units of `token` from anvil's first dev account to `to`; waits in the pool until a block is mined. */
  sendToken(token: Address, to: string, amount: bigint): Promise<Hash> {
    return this.callToken(token, 'transfer', [to as Address, amount]);
  }

  /** Lets `spender` move up to `amount` of anvil's first dev account's `token`; waits in the pool until a block is mined. */
  approveToken(token: Address, spender: Address, amount: bigint): Promise<Hash> {
    return this.callToken(token, 'approve', [spender, amount]);
  }

  /**
   * `relayer` sends `transferFrom(owner, to, amount)` of `token` (an approval mined before: the
   * gas estimate reads the latest block): the Transfer log's from is `owner`, the transaction's
   * sender `relayer`. Waits in the pool until a block is mined.
   */
  transferTokenFrom(token: Address, relayer: Address, owner: Address, to: string, amount: bigint): Promise<Hash> {
    return this.callToken(token, 'transferFrom', [owner, to as Address, amount], relayer);
  }

  /** Sends `functionName(args)` to the TestToken at `token` from `account` (anvil's first dev account unless given). */
  private callToken(
    token: Address,
    functionName: 'transfer' | 'approve' | 'transferFrom',
    args: readonly unknown[],
    account: Address = ANVIL_DEV_ACCOUNT.address,
  ): Promise<Hash> {
    return this.client.writeContract({
      address: token,
      abi: readArtifacts().contracts.TestToken.abi,
      functionName,
      args,
      account,
      chain: foundry,
    });
  }

  /** Sends `value` wei to `to` through `forwarder`: the transfer to `to` is an internal call. */
  sendThrough(forwarder: Address, to: string, value: bigint): Promise<Hash> {
    return this.client.writeContract({
      address: forwarder,
      abi: readArtifacts().contracts.Forwarder.abi,
      functionName: 'forward',
      args: [to as Address],
      value,
      account: ANVIL_DEV_ACCOUNT.address,
      chain: foundry,
    });
  }

  /** Deploys a Sprayer (many token transfers in one transaction); mines its block. */
  async deploySprayer(): Promise<Address> {
    return this.deploy('Sprayer', []);
  }

  /** Has `sprayer` send `count` transfers of `value` of `token` (which it holds) to `to` in one transaction; waits in the pool. */
  spray(sprayer: Address, token: Address, to: string, value: bigint, count: number): Promise<Hash> {
    return this.client.writeContract({
      address: sprayer,
      abi: readArtifacts().contracts.Sprayer.abi,
      functionName: 'spray',
      args: [token, to as Address, value, BigInt(count)],
      account: ANVIL_DEV_ACCOUNT.address,
      chain: foundry,
      gas: BigInt(40_000 + 12_000 * count),
    });
  }

  /**
   * A native transfer signed by `privateKey` at its next nonce, not sent: `sendRaw` sends it, and
   * sends the very same transaction again after a reorg took it away (anvil does not put reverted
   * transactions back in its pool).
   */
  async signedTransfer(privateKey: Hex, to: string, value: bigint): Promise<Hex> {
    const account = privateKeyToAccount(privateKey);
    const nonce = await this.client.getTransactionCount({ address: account.address, blockTag: 'pending' });
    return account.signTransaction({
      chainId: foundry.id,
      type: 'eip1559',
      to: to as Address,
      value,
      nonce,
      gas: 21_000n,
      maxFeePerGas: 100_000_000_000n,
      maxPriorityFeePerGas: 1_000_000_000n,
    });
  }

  sendRaw(raw: Hex): Promise<Hash> {
    return this.client.sendRawTransaction({ serializedTransaction: raw });
  }

  /** Caps the gas of the blocks mined from now on (210,000: ten plain transfers a block). */
  setBlockGasLimit(gas: bigint): Promise<void> {
    return this.client.setBlockGasLimit({ gasLimit: gas });
  }

  /**
   * Mines `blocks` blocks, at most 200 a request (thousands in one request can outlast the
   * client's 10 s timeout while anvil also answers a watcher's reads); answers the new head.
   */
  async mine(blocks = 1): Promise<number> {
    for (let left = blocks; left > 0; left -= 200) await this.client.mine({ blocks: Math.min(200, left) });
    return this.head();
  }

  async blockOf(txHash: Hash): Promise<number> {
    return Number((await this.client.getTransactionReceipt({ hash: txHash })).blockNumber);
  }

  snapshot(): Promise<`0x${string}`> {
    return this.client.snapshot();
  }

  revert(id: `0x${string}`): Promise<void> {
    return this.client.revert({ id });
  }

  stop(): Promise<void> {
    return this.anvil.stop(2000);
  }
}

function testClient(url: string) {
  return createTestClient({ mode: 'anvil', chain: foundry, transport: http(url, { timeout: 10_000 }) })
    .extend(publicActions)
    .extend(walletActions);
}
