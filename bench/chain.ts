import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { Address, Hash } from 'viem';
import { projectRoot } from '../config/config';
import type { ChainWatcherView } from '../contracts/temporal';
import { writeDocSection } from '../scripts/lib/doc-section';
import { TestChain } from '../scripts/lib/test-chain';
import { depositHelpers, type PreparedDeposit } from '../scripts/lib/deposit-helpers';
import { eventually } from '../scripts/lib/eventually';
import { ProcessStack } from '../scripts/lib/stack/process-stack';
import { cpuMs } from './proc';
import { quantile } from './stats';

const USAGE = `npm run bench:chain [-- --blocks N] [--deposits N] [--delays N] [--tokens N] [--addresses M] [--docs]
  --blocks    empty blocks mined while the worker is stopped; the watcher's catch-up after its restart gives blocks/s (default 2000)
  --deposits  deposits in blocks of 10, mined at once; the time to all OPERATION_PENDING gives deposits/s (default 300);
              the same number of tUSD deposits after them (4 token transfers fill a block)
  --delays    single deposits, one after another: confirming block mined → OPERATION_PENDING (default 40), native then tUSD
  --tokens    ERC-20 tokens allowed (DEPOSIT_TOKENS), each a TestToken of solidity/ (default 3)
  --addresses open tUSD deposit addresses prepared before the token rows: the watcher's eth_getLogs filters by all of them (default 1000)
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

  // Base fee 0: full blocks raise EIP-1559's base fee an eighth a block, and anvil drops from its
  // pool the transfers whose fee cap it passes, so 300 transfers at 1 gwei would mine about 60.
  const chain = await TestChain.start(['--base-fee', '0']);
  const tokens: Address[] = [];
  for (let i = 0; i < tokenCount; i++) tokens.push(await chain.deployToken(`Test ${i}`, i === 0 ? 'tUSD' : `t${i}`));
  // After the deploys (a token costs more than this): ten plain transfers (21,000 gas each) fill a
  // block, so a pool of N transfers mines into N / 10 blocks.
  await chain.setBlockGasLimit(210_000n);
  const stack = new ProcessStack({
    env: {
      CHAIN_RPC_URL: chain.url,
      DEPOSIT_CONFIRMATIONS: String(CONFIRMATIONS),
      DEPOSIT_TOKENS: tokens.map((t, i) => `${CHAIN}:${t}=${i === 0 ? 'tUSD' : `t${i}`}:6`).join(','),
    },
  });
  try {
    await stack.start();
    const { watcher, recordIfReadable, ...d } = depositHelpers(
      () => stack,
      () => chain,
      CHAIN,
    );
    await eventually(() => watcher().catch(() => undefined), 60_000);
    const prepare = (asset = 'native') => d.prepare({ asset, minAmount: '1', idPrefix: 'bench' });
    /** `count` executions prepared ten at a time. */
    const prepareMany = async (count: number, asset = 'native') => {
      const out = [];
      for (let i = 0; i < count; i += 10)
        out.push(...(await Promise.all(Array.from({ length: Math.min(10, count - i) }, () => prepare(asset)))));
      return out;
    };
    /** Waits until the watcher's state passes `done`, saying where it is every 15 s (a stall shows which number stopped). */
    const watch = async (what: string, done: (v: ChainWatcherView) => boolean) => {
      let last = Date.now();
      return eventually(
        async () => {
          const v = await watcher();
          if (Date.now() - last >= 15_000) {
            last = Date.now();
            say(`  waiting for ${what}: cursor ${v.cursor}, signalled ${v.signalledTotal}, pending ${v.pending.length}`);
          }
          return done(v) && v;
        },
        600_000,
        50,
      );
    };
    const caughtUp = async (n: number) => watch(`block ${n}`, (v) => v.cursor >= n);
    /**
     * Waits until the worker has finished the work prepares left it (each new execution's first
     * workflow task and projection): a worker busy with a backlog of a thousand executions
     * follows the chain at a fraction of its rate, and open deposit addresses are idle executions.
     * Idle: under 100 ms of CPU in a second (the watcher's polls cost a few).
     */
    const workerIdle = async () => {
      const pid = stack.worker!.child.pid!;
      const started = Date.now();
      for (;;) {
        const before = cpuMs(pid);
        await new Promise((r) => setTimeout(r, 1000));
        if (cpuMs(pid) - before < 100) break;
        if (Date.now() - started > 300_000) throw new Error('the worker did not become idle in 5 minutes');
      }
      say(`  worker idle after ${((Date.now() - started) / 1000).toFixed(0)} s`);
    };
    /**
     * Blocks/s the watcher follows when it is behind. Mined while it follows, the blocks would come
     * no faster than anvil mines them (anvil slows as its chain grows), so the worker stops, the
     * blocks are mined, and the worker starts again; the clock runs from the watcher's first round
     * after the restart (the worker's start is left out) to its reaching the head.
     */
    const followed = async (count: number) => {
      await caughtUp(await chain.head());
      await workerIdle();
      await stack.worker!.stop(10_000);
      const head = await chain.mine(count);
      await stack.startWorker();
      const from = (await eventually(() => watcher().catch(() => undefined), 60_000)).cursor;
      const first = await eventually(
        async () => {
          const v = await watcher();
          return v.cursor > from && v;
        },
        60_000,
        20,
      );
      const started = Date.now();
      const cpu = () => [chain.anvil.child.pid, stack.worker!.child.pid, stack.api!.child.pid].map((pid) => (pid ? cpuMs(pid) : 0));
      const cpuBefore = cpu();
      await caughtUp(head);
      const seconds = (Date.now() - started) / 1000;
      const [anvil, worker, api] = cpu().map((ms, i) => ((ms - cpuBefore[i]) / 1000).toFixed(1));
      say(`  caught up in ${seconds.toFixed(1)} s; CPU s meanwhile: anvil ${anvil}, worker ${worker}, api ${api}`);
      return (head - first.cursor) / seconds;
    };
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
        const done = await d.operationPending(e, 60_000, recordIfReadable, 20);
        const at = done.history.find((h) => h.status === 'OPERATION_PENDING')!.at;
        out.push(Date.parse(at) - confirmedAt);
      }
      return out.sort((a, b) => a - b);
    };
    /** `count` deposits' transfers sent to the pool, then their blocks and the confirming ones mined at once: deposits/s signalled, and the blocks they took. */
    const depositsAtOnce = async (executions: PreparedDeposit[], perBlock: number, send: (e: PreparedDeposit) => Promise<Hash>) => {
      const before = (await watcher()).signalledTotal;
      const txs: Hash[] = [];
      for (const e of executions) txs.push(await send(e));
      const started = Date.now();
      await chain.mine(Math.ceil(executions.length / perBlock) + CONFIRMATIONS - 1);
      const mined = await Promise.all(txs.map((tx) => chain.blockOf(tx).catch(() => undefined)));
      const lost = mined.filter((b) => b === undefined).length;
      if (lost > 0) throw new Error(`${lost} of ${txs.length} transfers were not mined`);
      await watch(`${before + executions.length} signals`, (v) => v.signalledTotal >= before + executions.length);
      const perS = executions.length / ((Date.now() - started) / 1000);
      return { perS, blocks: new Set(mined).size };
    };

    say(`deposits: ${deposits} executions prepared, their transfers in ${deposits / 10} blocks`);
    const native = await depositsAtOnce(await prepareMany(deposits), 10, (e) => chain.send(e.address, 1n));
    say(`delays: ${delays} deposits, each one alone`);
    const delayMs = await measureDelays(delays, 'native');
    const nativeAddresses = deposits + delays;
    say(`blocks: ${blocks} empty blocks behind, ${nativeAddresses} deposit addresses`);
    const blocksPerS = await followed(blocks);

    say(`tokens: ${openAddresses} open tUSD deposit addresses prepared`);
    await prepareMany(openAddresses, `erc20:${tokens[0]}`);
    const tokenAddresses = nativeAddresses + openAddresses;
    say(`blocks: ${blocks} empty blocks behind, ${tokenAddresses} deposit addresses`);
    const tokenBlocksPerS = await followed(blocks);
    say(`token deposits: ${deposits} tUSD transfers, mined at once`);
    // A token transfer to a fresh address costs about 51,000 gas: four fill a 210,000-gas block.
    const token = await depositsAtOnce(await prepareMany(deposits, `erc20:${tokens[0]}`), 4, (e) =>
      chain.sendToken(tokens[0], e.address, 1n),
    );
    say(`token delays: ${delays} tUSD deposits, each one alone`);
    const tokenDelayMs = await measureDelays(delays, 'token');

    const row = {
      blocksPerS: Math.round(blocksPerS),
      depositsPerS: Math.round(native.perS * 10) / 10,
      delayP50Ms: Math.round(quantile(delayMs, 0.5)),
      delayP99Ms: Math.round(quantile(delayMs, 0.99)),
      tokenBlocksPerS: Math.round(tokenBlocksPerS),
      tokenDepositsPerS: Math.round(token.perS * 10) / 10,
      tokenDelayP50Ms: Math.round(quantile(tokenDelayMs, 0.5)),
      tokenDelayP99Ms: Math.round(quantile(tokenDelayMs, 0.99)),
    };
    const table = [
      `${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} CPUs, load ${os.loadavg()[0].toFixed(1)} at the end; \`npm run bench:chain -- --blocks ${blocks} --deposits ${deposits} --delays ${delays} --tokens ${tokenCount} --addresses ${openAddresses}\`; ${tokenCount} tokens allowed throughout`,
      '',
      '| deposits | deposit addresses | blocks/s followed when behind | deposits/s signalled | confirming block → OPERATION_PENDING p50 | p99 |',
      '|---|---|---|---|---|---|',
      `| native | ${nativeAddresses} | ${row.blocksPerS} (${blocks} empty blocks) | ${row.depositsPerS} (${deposits} in ${native.blocks} blocks) | ${row.delayP50Ms} ms | ${row.delayP99Ms} ms (${delays} deposits) |`,
      `| tUSD | ${tokenAddresses} | ${row.tokenBlocksPerS} (${blocks} empty blocks) | ${row.tokenDepositsPerS} (${deposits} in ${token.blocks} blocks) | ${row.tokenDelayP50Ms} ms | ${row.tokenDelayP99Ms} ms (${delays} deposits) |`,
      '',
    ].join('\n');
    process.stdout.write(`${JSON.stringify(row)}\n\n${table}`);
    if (values.docs) writeDocSection(path.join(projectRoot, 'docs', 'performance.md'), 'bench-chain', table);
  } finally {
    await stack.stop().catch(() => undefined);
    await chain.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    process.stderr.write(`bench:chain failed: ${err.stack ?? err.message}\n`);
    process.exit(1);
  },
);
