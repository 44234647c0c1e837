import { createTestClient, http, publicActions, walletActions, type Address, type Hash } from 'viem';
import { foundry } from 'viem/chains';
import { ANVIL_DEV_ACCOUNT, startAnvil, type AnvilProcess } from '../../scripts/lib/anvil';

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

  /** `extraArgs`: more anvil flags (`--gas-limit 210000`: ten plain transfers a block). */
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

  /** Sends `value` wei from anvil's first dev account (the node picks the nonce); the transfer waits in the pool until a block is mined. */
  send(to: string, value: bigint): Promise<Hash> {
    return this.client.sendTransaction({ account: ANVIL_DEV_ACCOUNT.address, to: to as Address, value, chain: foundry });
  }

  /** Mines `blocks` blocks; answers the new head. */
  async mine(blocks = 1): Promise<number> {
    await this.client.mine({ blocks });
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
