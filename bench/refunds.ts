import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { Address, Hash } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { projectRoot } from '../config/config';
import { executionWorkflowId } from '../contracts/temporal';
import { ANVIL_GAS_ACCOUNT } from '../scripts/lib/anvil';
import { writeDocSection } from '../scripts/lib/doc-section';
import { TestChain } from '../scripts/lib/test-chain';
import { depositHelpers, startFollowingStack, type PreparedDeposit } from '../scripts/lib/deposit-helpers';
import { eventually } from '../scripts/lib/eventually';
import { refundReads } from '../scripts/lib/refund-reads';
import type { ProcessStack } from '../scripts/lib/stack/process-stack';

const USAGE = `npm run bench:refunds [-- --refunds N] [--addresses M] [--docs]
  --refunds    late deposits of each asset (native, then tUSD) to expired executions with a refundAddress (default 20)
  --addresses  how many expired executions (deposit addresses) of each asset they go to, in turn (default: one each)
  --docs     also put the table into docs/performance.md (between its bench-refunds markers)`;

const CHAIN = 'evm:31337';
const CONFIRMATIONS = 2;
const USD = 10n ** 6n;
const t0 = Date.now();
const say = (line: string) =>
  process.stderr.write(`[bench:refunds ${String(Math.round((Date.now() - t0) / 1000)).padStart(3)} s] ${line}\n`);

/**
 * How many refunds the service pays a minute with one worker, on the real processes of the test
 * stack and an anvil chain that mines a block a second (like `npm start`'s), at the default refund
 * settings but a reorg window of 6 blocks (a transfer is paid back once deeper than it): N late
 * native deposits at once, then N late tUSD deposits at once (each fee topped up by the gas
 * account first, one top-up at a time). Timed from the moment every row is `due` to the last one
 * `refunded`.
 */
async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      refunds: { type: 'string', default: '20' },
      addresses: { type: 'string' },
      docs: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) return void console.log(USAGE);
  const count = Number(values.refunds);
  const addresses = Math.min(count, Number(values.addresses ?? count));
  if (!Number.isInteger(addresses) || addresses < 1) throw new Error(`--addresses must be a positive integer: ${USAGE}`);
  const chain = await TestChain.start();
  const tusd = await chain.deployToken('Test USD', 'tUSD');
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'intent-service-bench-refunds-'));
  const gasKeyFile = path.join(tmp, 'gas-account.key');
  writeFileSync(gasKeyFile, `${ANVIL_GAS_ACCOUNT.privateKey}\n`, { mode: 0o600 });
  let stack: ProcessStack | undefined;
  const miner = setInterval(() => void chain.mine(1).catch(() => undefined), 1000);
  try {
    stack = await startFollowingStack(chain, CHAIN, CONFIRMATIONS, {
      DEPOSIT_TOKENS: `${CHAIN}:${tusd}=tUSD:6`,
      CHAIN_REORG_WINDOW: '6',
      REFUND_PAYMENTS: 'on',
      REFUND_GAS_KEY_FILE: gasKeyFile,
    });
    const running = stack;
    const deposits = depositHelpers(
      () => running,
      () => chain,
      CHAIN,
    );
    const reads = refundReads(
      () => running,
      () => chain,
    );

    /** `addresses` expired executions of `asset`, sent `count` transfers `send(address)` in turn; answers when every row is `due` and the time from then to all `refunded`. */
    const measure = async (asset: string, send: (address: string) => Promise<Hash>): Promise<{ seconds: number; perMinute: number }> => {
      const executions: PreparedDeposit[] = [];
      for (let i = 0; i < addresses; i++) {
        const refundAddress = privateKeyToAccount(generatePrivateKey()).address;
        executions.push(
          await deposits.prepare({
            asset,
            minAmount: '1000000',
            idPrefix: 'bench-refund',
            extra: { ttlSeconds: 1, deposit: { chain: CHAIN, asset, minAmount: '1000000', refundAddress } },
          }),
        );
      }
      for (const e of executions) await eventually(async () => (await deposits.record(e)).status === 'EXPIRED', 30_000);
      const txs: Hash[] = [];
      for (let i = 0; i < count; i++) txs.push(await send(executions[i % addresses].address));
      const states = () =>
        reads.readModel(async (ledger) => {
          const rows = (
            await Promise.all(executions.map((e) => ledger.ofExecution(executionWorkflowId(e.wallet.id, e.executionId))))
          ).flat();
          return txs.map((tx) => rows.find((row) => row.txHash === tx.toLowerCase())?.state);
        });
      await eventually(async () => (await states()).every((s) => s !== undefined), 120_000, 100);
      const start = Date.now();
      say(`${asset}: ${count} rows due`);
      await eventually(async () => (await states()).every((s) => s === 'refunded'), 600_000, 200);
      const seconds = (Date.now() - start) / 1000;
      return { seconds, perMinute: (count * 60) / seconds };
    };

    const native = await measure('native', (to) => chain.send(to, 10n ** 16n));
    const token = await measure(`erc20:${tusd.toLowerCase()}`, (to) => chain.sendToken(tusd as Address, to, 5n * USD));
    const fmt = (m: { seconds: number; perMinute: number }) => `${m.seconds.toFixed(1)} s | ${m.perMinute.toFixed(1)}`;
    const table = [
      `${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} CPUs, load ${os.loadavg()[0].toFixed(1)} at the end; \`npm run bench:refunds -- --refunds ${count} --addresses ${addresses}\`; one worker, a block a second, DEPOSIT_CONFIRMATIONS ${CONFIRMATIONS}, CHAIN_REORG_WINDOW 6`,
      '',
      '| refunds | rows | deposit addresses | all due → all refunded | refunds/min |',
      '|---|---|---|---|---|',
      `| native (0.01 ETH each) | ${count} | ${addresses} | ${fmt(native)} |`,
      `| tUSD (5 each; fee topped up by the gas account) | ${count} | ${addresses} | ${fmt(token)} |`,
      '',
    ].join('\n');
    process.stdout.write(`${JSON.stringify({ native, token })}\n\n${table}`);
    if (values.docs) writeDocSection(path.join(projectRoot, 'docs', 'performance.md'), 'bench-refunds', table);
  } finally {
    clearInterval(miner);
    await stack?.stop().catch(() => undefined);
    await chain.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    process.stderr.write(`bench:refunds failed: ${err.stack ?? err.message}\n`);
    process.exit(1);
  },
);
