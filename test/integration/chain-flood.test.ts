import assert from 'node:assert/strict';
import type { Address } from 'viem';
import { chainWatcherWorkflowId } from '../../contracts/temporal';
import { ANVIL_DEV_ACCOUNT } from '../../scripts/lib/anvil';
import { TestChain } from '../support/chain';
import { depositHelpers, refundsOf as refundsOfExecution, startFollowingStack, type PreparedDeposit } from '../support/deposit-helpers';
import { eventually } from '../support/executions';
import { freePort } from '../support/ports';
import { metricSum, scrape } from '../support/prometheus';
import type { ProcessStack } from '../support/process-stack';
import { ROUND_AGE_ALERT_SECONDS } from '../../worker/metrics';

const CHAIN = 'evm:31337';
const CONFIRMATIONS = 3;
/** Room for 2,000 plain transfers a block. */
const BLOCK_GAS = 100_000_000n;

/**
 * Floods of transactions, each its own (not a contract's loop), on a real anvil chain followed by
 * a real Temporal dev server, worker and API: the watcher reads them late, never stops. Sent as
 * batched JSON-RPC with automine off, then mined, so that a flood takes seconds to build.
 */
describe('the chain watcher flooded with transactions: it degrades, never stops', function () {
  this.timeout(180_000);
  let chain: TestChain;
  let stack: ProcessStack;
  let metricsUrl: string;
  let tusd: Address;
  let nonce: number;

  before(async function () {
    this.timeout(120_000);
    chain = await TestChain.start(['--gas-limit', String(BLOCK_GAS)]);
    tusd = await chain.deployToken('Test USD', 'tUSD');
    nonce = await chain.client.getTransactionCount({ address: ANVIL_DEV_ACCOUNT.address, blockTag: 'pending' });
    const metricsPort = await freePort();
    metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    stack = await startFollowingStack(chain, CHAIN, CONFIRMATIONS, {
      DEPOSIT_TOKENS: `${CHAIN}:${tusd}=tUSD:6`,
      WORKER_METRICS_PORT: String(metricsPort),
    });
  });
  after(async () => {
    await stack?.stop();
    await chain?.stop();
  });

  const helpers = depositHelpers(
    () => stack,
    () => chain,
    CHAIN,
  );
  const deposits = helpers;
  const watcherId = chainWatcherWorkflowId(CHAIN);
  /** OPERATION_PENDING within `timeoutMs`; else fails with what the watcher's pending activity last failed on. */
  const operationPending = async (e: PreparedDeposit, timeoutMs: number) => {
    try {
      return await helpers.operationPending(e, timeoutMs);
    } catch (err) {
      const described = await stack.client.workflow.getHandle(watcherId).describe();
      const pending = described.raw.pendingActivities?.map(
        (a) => `${a.activityType?.name} attempt ${a.attempt}: ${a.lastFailure?.message}`,
      );
      throw new Error(`${(err as Error).message}; the watcher's pending activities: ${JSON.stringify(pending)}`);
    }
  };
  const refundsOf = (e: PreparedDeposit) => refundsOfExecution(stack, e);
  const metric = async (name: string, labels: Record<string, string> = {}) =>
    metricSum(await scrape(metricsUrl), name, { chain: CHAIN, ...labels });
  /** Mines the deposit's block and its confirmations, then waits for OPERATION_PENDING: the must-show's minute, and how long it took. */
  const minedThenPending = async (e: PreparedDeposit) => {
    await chain.mine(CONFIRMATIONS);
    const mined = Date.now();
    const funded = await operationPending(e, 60_000);
    console.log(`      OPERATION_PENDING ${((Date.now() - mined) / 1000).toFixed(1)} s after the deposit and its confirmations were mined`);
    return funded;
  };

  /**
   * Puts `count` transactions from anvil's first dev account in the pool, `call(i)` each, in
   * batched JSON-RPC requests of 500 (nonces numbered here, so the node needs no estimate).
   */
  const sendMany = async (count: number, call: (i: number) => { to: string; data?: string; value?: bigint; gas: bigint }) => {
    for (let start = 0; start < count; start += 500) {
      const batch = Array.from({ length: Math.min(500, count - start) }, (_, k) => {
        const { to, data, value, gas } = call(start + k);
        return {
          jsonrpc: '2.0',
          id: start + k,
          method: 'eth_sendTransaction',
          params: [
            {
              from: ANVIL_DEV_ACCOUNT.address,
              to,
              ...(data === undefined ? {} : { data }),
              value: `0x${(value ?? 0n).toString(16)}`,
              gas: `0x${gas.toString(16)}`,
              gasPrice: '0x174876e800',
              nonce: `0x${(nonce++).toString(16)}`,
            },
          ],
        };
      });
      const res = await fetch(chain.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(batch) });
      const answers = (await res.json()) as Array<{ error?: { message: string } }>;
      const failed = answers.find((a) => a.error !== undefined);
      assert.equal(failed, undefined, failed?.error?.message);
    }
  };
  const tokenTransfer = (to: string, amount: bigint) => ({
    to: tusd,
    data: `0xa9059cbb${to.slice(2).toLowerCase().padStart(64, '0')}${amount.toString(16).padStart(64, '0')}`,
    gas: 60_000n,
  });

  /** The largest activity answer in every run of the watcher, in bytes. */
  const largestAnswer = async () => {
    let largest = 0;
    for await (const run of stack.client.workflow.list({ query: `WorkflowId = '${watcherId}'` })) {
      const history = await stack.client.workflow.getHandle(watcherId, run.runId).fetchHistory();
      for (const ev of history.events ?? [])
        for (const p of ev.activityTaskCompletedEventAttributes?.result?.payloads ?? []) largest = Math.max(largest, p.data?.length ?? 0);
    }
    return largest;
  };

  it('when 10,000 one-unit token transfers, each its own transaction, are mined in 20 blocks, then a native deposit to another execution in the next block reaches OPERATION_PENDING within a minute, and the flood is one held row per block', async () => {
    const victim = await deposits.prepare({ asset: `erc20:${tusd}`, minAmount: '1000000', idPrefix: 'flood' });
    const other = await deposits.prepare({ minAmount: '1000', idPrefix: 'flood' });
    for (let block = 0; block < 20; block++) {
      await sendMany(500, () => tokenTransfer(victim.address, 1n));
      await chain.mine(1);
    }
    await sendMany(1, () => ({ to: other.address, value: 1000n, gas: 21_000n }));
    const funded = await minedThenPending(other);
    assert.equal(funded.deposit?.amount, '1000');
    // Read without their call traces: tracing a block of 500 transactions would stall the node.
    assert.ok((await metric('intent_chain_untraced_blocks_total', { reason: 'heavy' })) >= 20);

    const rows = await eventually(async () => {
      const found = await refundsOf(victim);
      return found.length === 20 && found;
    }, 60_000);
    assert.equal(
      rows.reduce((n, r) => n + (r.transfers ?? 1), 0),
      10_000,
    );
    assert.ok(rows.every((r) => r.holdReason === 'too-small' && r.reason === 'below-minimum'));
  });

  it('when 8,000 native transfers of the minimum, each its own transaction, reach one deposit address in 4 blocks, then a deposit to another execution in the next block reaches OPERATION_PENDING within a minute, the first transfer is the deposit, every other is owed back, and no activity answer nears the payload limit', async () => {
    const victim = await deposits.prepare({ minAmount: '1000', idPrefix: 'surplus' });
    const other = await deposits.prepare({ minAmount: '1000', idPrefix: 'surplus' });
    const firstNonce = nonce;
    for (let block = 0; block < 4; block++) {
      await sendMany(2_000, () => ({ to: victim.address, value: 1000n, gas: 21_000n }));
      await chain.mine(1);
    }
    await sendMany(1, () => ({ to: other.address, value: 1000n, gas: 21_000n }));
    const funded = await minedThenPending(other);
    assert.equal(funded.deposit?.amount, '1000');

    const taken = await operationPending(victim, 30_000);
    const firstTx = await chain.client.getTransaction({ hash: taken.deposit!.txHash as `0x${string}` });
    assert.equal(firstTx.nonce, firstNonce);
    const rows = await eventually(async () => {
      const found = await refundsOf(victim);
      return found.reduce((n, r) => n + (r.transfers ?? 1), 0) === 7_999 && found;
    }, 60_000);
    assert.equal(
      rows.reduce((n, r) => n + BigInt(r.amount ?? '0'), 0n),
      7_999n * 1000n,
    );
    const largest = await largestAnswer();
    assert.ok(largest < 512 * 1024, `an activity answered ${largest} bytes`);
  });

  it('when the chain node stops answering, then the time since the watcher’s last successful round grows past the lag alert’s threshold, and falls back once the node answers', async () => {
    const age = () => metric('intent_chain_round_age_seconds');
    await eventually(async () => (await age()) < 5, 30_000);
    process.kill(chain.anvil.child.pid!, 'SIGSTOP');
    try {
      await eventually(async () => (await age()) > ROUND_AGE_ALERT_SECONDS, (ROUND_AGE_ALERT_SECONDS + 15) * 1000, 500);
    } finally {
      process.kill(chain.anvil.child.pid!, 'SIGCONT');
    }
    await chain.mine(1);
    await eventually(async () => (await age()) < 5, 60_000);
  });
});
