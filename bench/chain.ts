import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { Address, Hash } from 'viem';
import { projectRoot } from '../config/config';
import { chainWatcherStateQuery, chainWatcherWorkflowId, type ChainWatcherView } from '../contracts/temporal';
import type { ExecutionRecord } from '../domain/execution-state';
import { writeDocSection } from '../scripts/lib/doc-section';
import { TestChain } from '../test/support/chain';
import { eventually, newWallet, sampleIntent } from '../test/support/executions';
import { request } from '../test/support/http';
import { ProcessStack } from '../test/support/process-stack';
import { quantile } from './stats';

const USAGE = `npm run bench:chain [-- --blocks N] [--deposits N] [--delays N] [--tokens N] [--addresses M] [--docs]
  --blocks    empty blocks mined at once; the watcher's catch-up time gives blocks/s (default 2000)
  --deposits  deposits in blocks of 10, mined at once; the time to all OPERATION_PENDING gives deposits/s (default 300);
              the same number of tUSD deposits after them (4 token transfers fill a block)
  --delays    single deposits, one after another: confirming block mined → OPERATION_PENDING (default 40), native then tUSD
  --tokens    ERC-20 tokens allowed (DEPOSIT_TOKENS), each a TestToken of solidity/ (default 3)
  --addresses open tUSD deposit addresses prepared before the token measurements: the watcher's eth_getLogs filters by all of them (default 1000)
  --docs     also put the table into docs/performance.md (between its bench-chain markers)`;

const CHAIN = 'evm:31337';
const CONFIRMATIONS = 2;
const t0 = Date.now();
const say = (line: string) => process.stderr.write(`[bench:chain ${String(Math.round((Date.now() - t0) / 1000)).padStart(3)} s] ${line}\n`);

/**
 * How fast the chain watcher follows a real anvil chain, on the real processes of the test stack
 * (Temporal dev server, worker and API as child processes) with the default watcher settings
 * (DEPOSIT_CONFIRMATIONS 2, CHAIN_POLL_INTERVAL_MS 1000, CHAIN_MAX_BLOCKS_PER_ROUND 100).
 */
async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      blocks: { type: 'string', default: '2000' },
      deposits: { type: 'string', default: '300' },
      delays: { type: 'string', default: '40' },
      tokens: { type: 'string', default: '3' },
      addresses: { type: 'string', default: '1000' },
      docs: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) return void console.log(USAGE);
  const blocks = Number(values.blocks);
  const deposits = Math.ceil(Number(values.deposits) / 10) * 10;
  const delays = Number(values.delays);
  const tokenCount = Math.max(1, Number(values.tokens));
  const openAddresses = Number(values.addresses);

  const seedDir = mkdtempSync(path.join(os.tmpdir(), 'bench-chain-'));
  // Ten plain transfers (21,000 gas each) fill a block: a pool of N transfers mines into N / 10 blocks.
  const chain = await TestChain.start(['--gas-limit', '210000']);
  const tokens: Address[] = [];
  for (let i = 0; i < tokenCount; i++) tokens.push(await chain.deployToken(`Test ${i}`, i === 0 ? 'tUSD' : `t${i}`));
  const stack = new ProcessStack({
    env: {
      CHAIN_RPC_URL: chain.url,
      DEPOSIT_CONFIRMATIONS: String(CONFIRMATIONS),
      DEPOSIT_SEED_FILE: path.join(seedDir, 'seed'),
      DEPOSIT_TOKENS: tokens.map((t, i) => `${CHAIN}:${t}=${i === 0 ? 'tUSD' : `t${i}`}:6`).join(','),
    },
  });
  try {
    await stack.start();
    const watcher = () =>
      stack.client.workflow.getHandle(chainWatcherWorkflowId(CHAIN)).query(chainWatcherStateQuery) as Promise<ChainWatcherView>;
    await eventually(() => watcher().catch(() => undefined), 60_000);
    const api = (method: string, p: string, json?: unknown) => request(stack.apiUrl, method, p, { json, token: stack.token });
    const prepare = async (asset = 'native') => {
      const wallet = newWallet();
      const executionId = `bench-${randomUUID()}`;
      const res = await api('POST', `/api/v1/executions/${wallet.id}`, {
        executionId,
        intent: sampleIntent(),
        deposit: { chain: CHAIN, asset, minAmount: '1' },
      });
      if (res.status !== 201) throw new Error(`prepare: ${res.status} ${res.text}`);
      return { wallet, executionId, address: res.body.result.depositTarget.address as string };
    };
    const record = async (e: { wallet: { id: string }; executionId: string }) =>
      (await api('GET', `/api/v1/executions/${e.wallet.id}/${e.executionId}`)).body?.result as ExecutionRecord | undefined;
    const caughtUp = async (n: number) => eventually(async () => (await watcher()).cursor >= n, 600_000, 50);

    say(`blocks: ${blocks} empty blocks mined at once`);
    await caughtUp(await chain.head());
    let started = Date.now();
    const head = await chain.mine(blocks);
    await caughtUp(head);
    const blocksPerS = blocks / ((Date.now() - started) / 1000);

    say(`deposits: ${deposits} executions prepared, their transfers in ${deposits / 10} blocks`);
    const executions = [];
    for (let i = 0; i < deposits; i += 10) executions.push(...(await Promise.all(Array.from({ length: 10 }, () => prepare()))));
    const { signalledTotal } = await watcher();
    // The transfers wait in the pool; the clock starts when their blocks and the confirming ones are mined, all at once.
    const txs: Hash[] = [];
    for (const e of executions) txs.push(await chain.send(e.address, 1n));
    started = Date.now();
    await chain.mine(deposits / 10 + CONFIRMATIONS - 1);
    await eventually(async () => (await watcher()).signalledTotal >= signalledTotal + deposits, 600_000, 50);
    const depositsWallMs = Date.now() - started;
    const depositsPerS = deposits / (depositsWallMs / 1000);
    const depositBlocks = new Set(await Promise.all(txs.map((tx) => chain.blockOf(tx)))).size;

    /** `count` deposits, each one alone: confirming block mined → OPERATION_PENDING, sorted. */
    const measureDelays = async (count: number, asset: 'native' | 'token'): Promise<number[]> => {
      const out: number[] = [];
      for (let i = 0; i < count; i++) {
        const e = await prepare(asset === 'native' ? 'native' : `erc20:${tokens[0]}`);
        await (asset === 'native' ? chain.send(e.address, 1n) : chain.sendToken(tokens[0], e.address, 1n));
        await chain.mine(1);
        // The watcher's poll phase is random relative to this, as it is for a real chain's blocks.
        await new Promise((r) => setTimeout(r, Math.random() * 1000));
        const confirmedAt = Date.now();
        await chain.mine(CONFIRMATIONS - 1);
        const done = await eventually(
          async () => {
            const r = await record(e);
            return r?.status === 'OPERATION_PENDING' && r;
          },
          60_000,
          20,
        );
        const at = done.history.find((h) => h.status === 'OPERATION_PENDING')!.at;
        out.push(Date.parse(at) - confirmedAt);
      }
      return out.sort((a, b) => a - b);
    };
    say(`delays: ${delays} deposits, each one alone`);
    const delayMs = await measureDelays(delays, 'native');

    say(`tokens: ${tokenCount} allowed, ${openAddresses} open tUSD deposit addresses prepared`);
    for (let i = 0; i < openAddresses; i += 10)
      await Promise.all(Array.from({ length: Math.min(10, openAddresses - i) }, () => prepare(`erc20:${tokens[0]}`)));
    await caughtUp(await chain.head());
    started = Date.now();
    const tokenHead = await chain.mine(blocks);
    await caughtUp(tokenHead);
    const tokenBlocksPerS = blocks / ((Date.now() - started) / 1000);

    say(`token deposits: ${deposits} tUSD transfers, mined at once`);
    const tokenExecutions = [];
    for (let i = 0; i < deposits; i += 10)
      tokenExecutions.push(...(await Promise.all(Array.from({ length: 10 }, () => prepare(`erc20:${tokens[0]}`)))));
    const before = (await watcher()).signalledTotal;
    const tokenTxs: Hash[] = [];
    for (const e of tokenExecutions) tokenTxs.push(await chain.sendToken(tokens[0], e.address, 1n));
    started = Date.now();
    // A token transfer to a fresh address costs about 51,000 gas: four fill a 210,000-gas block.
    await chain.mine(Math.ceil(deposits / 4) + CONFIRMATIONS - 1);
    await eventually(async () => (await watcher()).signalledTotal >= before + deposits, 600_000, 50);
    const tokenDepositsPerS = deposits / ((Date.now() - started) / 1000);
    const tokenDepositBlocks = new Set(await Promise.all(tokenTxs.map((tx) => chain.blockOf(tx)))).size;

    say(`token delays: ${delays} tUSD deposits, each one alone`);
    const tokenDelayMs = await measureDelays(delays, 'token');
    const row = {
      blocksPerS: Math.round(blocksPerS),
      depositsPerS: Math.round(depositsPerS * 10) / 10,
      delayP50Ms: Math.round(quantile(delayMs, 0.5)),
      delayP99Ms: Math.round(quantile(delayMs, 0.99)),
      tokenBlocksPerS: Math.round(tokenBlocksPerS),
      tokenDepositsPerS: Math.round(tokenDepositsPerS * 10) / 10,
      tokenDelayP50Ms: Math.round(quantile(tokenDelayMs, 0.5)),
      tokenDelayP99Ms: Math.round(quantile(tokenDelayMs, 0.99)),
    };
    const table = [
      `${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} CPUs, load ${os.loadavg()[0].toFixed(1)} at the end; \`npm run bench:chain -- --blocks ${blocks} --deposits ${deposits} --delays ${delays} --tokens ${tokenCount} --addresses ${openAddresses}\``,
      '',
      '| deposits | blocks/s followed | deposits/s signalled | confirming block → OPERATION_PENDING p50 | p99 |',
      '|---|---|---|---|---|',
      `| native | ${row.blocksPerS} (${blocks} empty blocks) | ${row.depositsPerS} (${deposits} in ${depositBlocks} blocks) | ${row.delayP50Ms} ms | ${row.delayP99Ms} ms (${delays} deposits) |`,
      `| tUSD, ${tokenCount} tokens allowed, ${openAddresses + deposits}+ deposit addresses | ${row.tokenBlocksPerS} (${blocks} empty blocks) | ${row.tokenDepositsPerS} (${deposits} in ${tokenDepositBlocks} blocks) | ${row.tokenDelayP50Ms} ms | ${row.tokenDelayP99Ms} ms (${delays} deposits) |`,
      '',
    ].join('\n');
    process.stdout.write(`${JSON.stringify(row)}\n\n${table}`);
    if (values.docs) writeDocSection(path.join(projectRoot, 'docs', 'performance.md'), 'bench-chain', table);
  } finally {
    await stack.stop().catch(() => undefined);
    await chain.stop();
    rmSync(seedDir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    process.stderr.write(`bench:chain failed: ${err.stack ?? err.message}\n`);
    process.exit(1);
  },
);
