import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { Hash } from 'viem';
import { projectRoot } from '../config/config';
import { chainWatcherStateQuery, chainWatcherWorkflowId, type ChainWatcherView } from '../contracts/temporal';
import type { ExecutionRecord } from '../domain/execution-state';
import { writeDocSection } from '../scripts/lib/doc-section';
import { TestChain } from '../test/support/chain';
import { eventually, newWallet, sampleIntent } from '../test/support/executions';
import { request } from '../test/support/http';
import { ProcessStack } from '../test/support/process-stack';
import { quantile } from './stats';

const USAGE = `npm run bench:chain [-- --blocks N] [--deposits N] [--delays N] [--docs]
  --blocks   empty blocks mined at once; the watcher's catch-up time gives blocks/s (default 2000)
  --deposits deposits in blocks of 10, mined at once; the time to all OPERATION_PENDING gives deposits/s (default 300)
  --delays   single deposits, one after another: confirming block mined → OPERATION_PENDING (default 40)
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
      docs: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) return void console.log(USAGE);
  const blocks = Number(values.blocks);
  const deposits = Math.ceil(Number(values.deposits) / 10) * 10;
  const delays = Number(values.delays);

  const seedDir = mkdtempSync(path.join(os.tmpdir(), 'bench-chain-'));
  // Ten plain transfers (21,000 gas each) fill a block: a pool of N transfers mines into N / 10 blocks.
  const chain = await TestChain.start(['--gas-limit', '210000']);
  const stack = new ProcessStack({
    env: { CHAIN_RPC_URL: chain.url, DEPOSIT_CONFIRMATIONS: String(CONFIRMATIONS), DEPOSIT_SEED_FILE: path.join(seedDir, 'seed') },
  });
  try {
    await stack.start();
    const watcher = () =>
      stack.client.workflow.getHandle(chainWatcherWorkflowId(CHAIN)).query(chainWatcherStateQuery) as Promise<ChainWatcherView>;
    await eventually(() => watcher().catch(() => undefined), 60_000);
    const api = (method: string, p: string, json?: unknown) => request(stack.apiUrl, method, p, { json, token: stack.token });
    const prepare = async () => {
      const wallet = newWallet();
      const executionId = `bench-${randomUUID()}`;
      const res = await api('POST', `/api/v1/executions/${wallet.id}`, {
        executionId,
        intent: sampleIntent(),
        deposit: { chain: CHAIN, asset: 'native', minAmount: '1' },
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
    for (let i = 0; i < deposits; i += 10) executions.push(...(await Promise.all(Array.from({ length: 10 }, prepare))));
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

    say(`delays: ${delays} deposits, each one alone`);
    const delayMs: number[] = [];
    for (let i = 0; i < delays; i++) {
      const e = await prepare();
      await chain.send(e.address, 1n);
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
      delayMs.push(Date.parse(at) - confirmedAt);
    }
    delayMs.sort((a, b) => a - b);
    const row = {
      blocksPerS: Math.round(blocksPerS),
      depositsPerS: Math.round(depositsPerS * 10) / 10,
      delayP50Ms: Math.round(quantile(delayMs, 0.5)),
      delayP99Ms: Math.round(quantile(delayMs, 0.99)),
    };
    const table = [
      `${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} CPUs, load ${os.loadavg()[0].toFixed(1)} at the end; \`npm run bench:chain -- --blocks ${blocks} --deposits ${deposits} --delays ${delays}\``,
      '',
      '| blocks/s followed | deposits/s signalled | confirming block → OPERATION_PENDING p50 | p99 |',
      '|---|---|---|---|',
      `| ${row.blocksPerS} (${blocks} empty blocks) | ${row.depositsPerS} (${deposits} in ${depositBlocks} blocks) | ${row.delayP50Ms} ms | ${row.delayP99Ms} ms (${delays} deposits) |`,
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
