import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Address } from 'viem';
import { chainClient } from '../../lib/chain-client';
import { DepositReader } from '../../lib/chain-reader';
import { openDatabase, type Database } from '../../db/database';
import { DepositAddressStore } from '../../db/deposit-addresses';
import { offersTraces } from '../../lib/chain-transaction';
import { chainWatcherStateQuery, chainWatcherWorkflowId } from '../../contracts/temporal';
import { TestChain } from '../support/chain';
import { startRpcRelay } from '../support/rpc-relay';
import { eventually } from '../support/executions';
import { request } from '../support/http';
import { freePort } from '../support/ports';
import { ProcessStack } from '../support/process-stack';
import { metricSum, scrape } from '../support/prometheus';

/**
 * Call traces, or none: the watcher's block reader on a real anvil chain (which has them), and on
 * the same chain behind a JSON-RPC relay on loopback that refuses every `debug_*` method the way a
 * provider without traces does (-32601), forwarding everything else to anvil.
 */
describe('chain traces: internal calls where the node has traces, a plain statement where it has none', function () {
  this.timeout(60_000);
  let chain: TestChain;
  let relay: { url: string; close: () => void };
  let relayUrl: string;
  let database: Database;
  let tusd: Address;
  let forwarder: Address;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'chain-traces-'));
  const CHAIN = 'evm:31337';
  const deposit = '0x' + '5a'.repeat(20);

  before(async () => {
    chain = await TestChain.start();
    tusd = await chain.deployToken('Test USD', 'tUSD');
    forwarder = await chain.deployForwarder();
    relay = await startRpcRelay(chain.url, (c) =>
      c.method.startsWith('debug_') ? { code: -32601, message: 'Method not found' } : undefined,
    );
    relayUrl = relay.url;
    database = await openDatabase({ sqliteFile: path.join(dir, 'read-model.sqlite') });
    await new DepositAddressStore(database).register({ chain: CHAIN, address: deposit, workflowId: 'exec:w:traces', minAmount: '1' });
  });
  after(async () => {
    await database?.close();
    relay?.close();
    await chain?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('when a block holds a top-level transfer, a token transfer and a contract internal call to a deposit address, then a node with traces shows all three; one without shows two and says so once', async () => {
    const top = await chain.send(deposit, 10n);
    const token = await chain.sendToken(tusd, deposit, 20n);
    const internal = await chain.sendThrough(forwarder, deposit, 30n);
    const block = await chain.mine(1);
    assert.equal(await chain.blockOf(internal), block);

    const read = async (url: string) => {
      let told = 0;
      const reader = new DepositReader(chainClient(url), new DepositAddressStore(database), [tusd.toLowerCase()], () => told++);
      const first = await reader.read(CHAIN, [block], 4);
      await reader.read(CHAIN, [block], 4);
      const transfers = first.transfers.map((t) => [t.txHash, t.transferIndex, t.asset, t.amount]).sort();
      return { transfers, told, traces: reader.traces };
    };
    const withTraces = await read(chain.url);
    assert.deepEqual(
      withTraces.transfers,
      [
        [top, 0, 'native', '10'],
        [token, 0, `erc20:${tusd.toLowerCase()}`, '20'],
        [internal, 1, 'native', '30'],
      ].sort(),
    );
    assert.deepEqual([withTraces.told, withTraces.traces], [0, true]);
    assert.equal(await offersTraces(chainClient(chain.url)), true);

    const without = await read(relayUrl);
    assert.deepEqual(
      without.transfers,
      [
        [top, 0, 'native', '10'],
        [token, 0, `erc20:${tusd.toLowerCase()}`, '20'],
      ].sort(),
    );
    assert.deepEqual([without.told, without.traces], [1, false]);
    assert.equal(await offersTraces(chainClient(relayUrl)), false);
  });

  it('when a node caps eth_getLogs (-32005 past two blocks) and has no eth_getBlockReceipts, then the reader asks for each half of the range and reads receipts one by one: the same token transfers as from anvil itself', async () => {
    // An address that takes tUSD: two transfers a block are two deposits, not a dust batch.
    const tokenDeposit = '0x' + '7b'.repeat(20);
    await new DepositAddressStore(database).register({
      chain: CHAIN,
      address: tokenDeposit,
      workflowId: 'exec:w:caps',
      minAmount: '1',
      asset: `erc20:${tusd.toLowerCase()}`,
    });
    const txs: string[] = [];
    for (let i = 0; i < 5; i++) {
      txs.push(await chain.sendToken(tusd, tokenDeposit, BigInt(100 + i)));
      await chain.sendToken(tusd, tokenDeposit, BigInt(200 + i));
      await chain.mine(1);
    }
    const last = await chain.head();
    const blocks = Array.from({ length: 5 }, (_, i) => last - 4 + i);
    const asked: string[] = [];
    const capped = await startRpcRelay(chain.url, (c) => {
      if (c.method === 'eth_getBlockReceipts') return { code: -32601, message: 'Method not found' };
      if (c.method !== 'eth_getLogs') return undefined;
      const { fromBlock, toBlock } = c.params[0] as { fromBlock: string; toBlock: string };
      asked.push(`${Number(fromBlock)}-${Number(toBlock)}`);
      return Number(toBlock) - Number(fromBlock) >= 2 ? { code: -32005, message: 'query returned more than 10000 results' } : undefined;
    });
    try {
      const read = async (url: string) => {
        const reader = new DepositReader(chainClient(url), new DepositAddressStore(database), [tusd.toLowerCase()]);
        const { transfers } = await reader.read(CHAIN, blocks, 10);
        return transfers.map((t) => [t.txHash, t.transferIndex, t.amount]).sort();
      };
      const direct = await read(chain.url);
      assert.equal(direct.length, 10);
      assert.deepEqual(await read(capped.url), direct);
      assert.ok(asked.includes(`${blocks[0]}-${blocks[4]}`) && asked.some((r) => r === `${blocks[0]}-${blocks[1]}`), asked.join(' '));
      assert.ok(direct.some(([tx, index]) => tx === txs[0] && index === 0));
    } finally {
      capped.close();
    }
  });

  it("when a block's call traces answer after the read's trace budget, then it is read without them and named untraced; a later read of it from the backlog takes the same late answer, asking the node no second time, and finds the internal transfer: late, not lost", async () => {
    const internal = await chain.sendThrough(forwarder, deposit, 40n);
    const block = await chain.mine(1);
    const traced: unknown[] = [];
    const slow = await startRpcRelay(
      chain.url,
      (c) => {
        if (c.method === 'debug_traceBlockByHash') traced.push(c.params[0]);
        return undefined;
      },
      (c) => (c.method === 'debug_traceBlockByHash' ? 1_500 : 0),
    );
    try {
      const reader = new DepositReader(chainClient(slow.url), new DepositAddressStore(database), []);
      const limits = (traceMs: number) => ({
        transfers: Infinity,
        bytes: Infinity,
        deadline: Infinity,
        traceDeadline: Date.now() + traceMs,
        traceMaxTransactions: 50,
      });
      const isInternal = (t: { txHash: string; transferIndex: number }) => t.txHash === internal.toLowerCase() && t.transferIndex === 1;
      const first = await reader.read(CHAIN, [block], 4, limits(200));
      assert.deepEqual(
        first.untraced.map((b) => b.number),
        [block],
      );
      assert.ok(!first.transfers.some(isInternal));
      const later = await reader.read(CHAIN, [], 4, limits(5_000), first.untraced);
      assert.deepEqual(later.traced, first.untraced);
      assert.deepEqual(
        later.transfers.filter(isInternal).map((t) => t.amount),
        ['40'],
      );
      assert.equal(traced.length, 1);
    } finally {
      slow.close();
    }
  });

  it('when the worker and the API follow a node without traces, then the worker says so at its first round, before any transaction (intent_chain_no_traces 1), and the operator /readyz says chain.traces false; on anvil itself, true and 0', async function () {
    this.timeout(120_000);
    const noTraces = async (rpcUrl: string) => {
      const [metricsPort, operatorPort] = [await freePort(), await freePort()];
      const stack = new ProcessStack({
        env: {
          CHAIN_RPC_URL: rpcUrl,
          DEPOSIT_TOKENS: `${CHAIN}:${tusd}=tUSD:6`,
          CHAIN_POLL_INTERVAL_MS: '100',
          WORKER_METRICS_PORT: String(metricsPort),
          OPERATOR_PORT: String(operatorPort),
        },
      });
      try {
        await stack.start();
        const watcher = () => stack.client.workflow.getHandle(chainWatcherWorkflowId(CHAIN)).query(chainWatcherStateQuery);
        // Two rounds read: the first asked the node whether it has traces.
        const start = await eventually(() => watcher().catch(() => undefined), 60_000);
        await chain.mine(2);
        await eventually(async () => (await watcher()).cursor >= start.cursor + 2, 30_000);
        const metric = metricSum(await scrape(`http://127.0.0.1:${metricsPort}/metrics`), 'intent_chain_no_traces', { chain: CHAIN });
        const ready = await request(`http://127.0.0.1:${operatorPort}`, 'GET', '/readyz');
        assert.equal(ready.status, 200, ready.text);
        return { metric, chain: ready.body.chain };
      } finally {
        await stack.stop();
      }
    };
    // The two blocks mined hold no transaction: only the probe at the first round can have told.
    assert.deepEqual(await noTraces(relayUrl), { metric: 1, chain: { traces: false } });
    assert.deepEqual(await noTraces(chain.url), { metric: 0, chain: { traces: true } });
  });
});
