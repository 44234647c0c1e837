// `npm run schemathesis`: the pinned Schemathesis (scripts/schemathesis.sh installs it) against a
// stack of real processes on free ports (Temporal dev server, storage nodes, worker following a
// local anvil chain, API), with a token of every scope: every check, a fixed seed, the phases from
// the document's examples to its links. Before it starts, one deposit is paid and a second transfer
// to the same address makes a refunds ledger row, so that the operations that need a transaction or
// a row the service knows (the deposit lookup, the transaction page, approve) are reached past 404:
// scripts/schemathesis.toml gives them these values. On demand only, never in `npm test`. Its JUnit
// and HAR reports are written to test-results/schemathesis/; from the HAR it prints each
// operation's answers by status. Exits with Schemathesis's status, or 1 when it passed but some
// operation was never answered other than 404.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { childEnv } from '../config/child-env';
import { projectRoot } from '../config/project-root';
import { createToken } from '../tokens/token-store';
import { depositHelpers, startFollowingStack } from './lib/deposit-helpers';
import { eventually } from './lib/eventually';
import { harExchanges, operationReach } from './lib/operation-reach';
import { type ProcessStack } from './lib/stack/process-stack';
import { EVERY_SCOPE } from './lib/stack/stack-settings';
import { TestChain } from './lib/test-chain';

const SEED = '70';
const CHAIN = 'evm:31337';
const CONFIRMATIONS = 2;

/** The values the operations that look up a transaction or a row are given (scripts/schemathesis.toml). */
interface KnownValues {
  SCHEMATHESIS_CHAIN: string;
  SCHEMATHESIS_DEPOSIT_TX: string;
  SCHEMATHESIS_REFUND_ID: string;
}

/** One deposit paid and confirmed, then a second transfer to its address: a refunds ledger row. */
async function payDeposit(stack: ProcessStack, chain: TestChain): Promise<KnownValues> {
  const helpers = depositHelpers(
    () => stack,
    () => chain,
    CHAIN,
  );
  const e = await helpers.prepare({ idPrefix: 'schemathesis' });
  const tx = await chain.send(e.address, 5000n);
  await chain.mine(CONFIRMATIONS);
  await helpers.operationPending(e, 60_000);
  await chain.send(e.address, 7000n);
  await chain.mine(CONFIRMATIONS);
  const refundId = await eventually(async () => {
    const rows = await helpers.api('GET', `/api/v1/refunds?chain=${CHAIN}`);
    return (rows.body?.result as Array<{ id: string }> | undefined)?.[0]?.id;
  }, 60_000);
  return { SCHEMATHESIS_CHAIN: CHAIN, SCHEMATHESIS_DEPOSIT_TX: tx, SCHEMATHESIS_REFUND_ID: refundId };
}

/** Prints each operation's answers by status from the run's HAR; answers how many were never answered other than 404. */
async function printReach(apiUrl: string, harFile: string): Promise<number> {
  // Schemathesis loads the document it tests and leaves that operation out of its run; this fetch counts for it.
  const url = `${apiUrl}/openapi.json`;
  const answer = await fetch(url);
  const document = (await answer.json()) as { paths: Record<string, Record<string, unknown>> };
  const exchanges = [...harExchanges(JSON.parse(readFileSync(harFile, 'utf8'))), { method: 'GET', url, status: answer.status }];
  const reach = operationReach(document.paths, exchanges);
  console.log('\nAnswers by operation (from the HAR report):');
  for (const r of reach) {
    const statuses = Object.entries(r.statuses)
      .map(([status, n]) => `${status}×${n}`)
      .join(' ');
    console.log(`  ${r.reached ? 'ok ' : 'NOT'} ${r.operation.padEnd(64)} ${statuses || 'no request'}`);
  }
  const unreached = reach.filter((r) => !r.reached).length;
  console.log(unreached === 0 ? 'Every operation was answered past 404.' : `${unreached} operations were never answered past 404.`);
  return unreached;
}

async function main(): Promise<number> {
  const [st, ...rest] = process.argv.slice(2);
  if (!st) throw new Error('usage: node dist/scripts/schemathesis.js <path of the st binary> [--config-file FILE] [st run options…]');
  // `--config-file` is an option of `st` itself, given before `run`.
  const config = rest[0] === '--config-file' ? rest.splice(0, 2) : [];
  const chain = await TestChain.start();
  let stack: ProcessStack | undefined;
  try {
    stack = await startFollowingStack(chain, CHAIN, CONFIRMATIONS);
    const known = await payDeposit(stack, chain);
    // Every scope, approve included (the stack's own token lacks that one).
    const reports = path.join(projectRoot, 'test-results', 'schemathesis');
    const har = path.join(reports, 'exchanges.har');
    const token = createToken(stack.tokensFile, 'schemathesis', [...EVERY_SCOPE]);
    const run = spawnSync(
      st,
      [
        ...config,
        'run',
        `${stack.apiUrl}/openapi.json`,
        '--checks',
        'all',
        '--seed',
        SEED,
        '--generation-deterministic',
        '--phases',
        'examples,coverage,fuzzing,stateful',
        '--header',
        `Authorization: Bearer ${token}`,
        '--report',
        'junit,har',
        '--report-dir',
        reports,
        '--report-har-path',
        har,
        ...rest,
      ],
      { stdio: 'inherit', env: childEnv({ ...known }) },
    );
    const unreached = await printReach(stack.apiUrl, har);
    return run.status || (unreached > 0 ? 1 : 0);
  } finally {
    await stack?.stop();
    await chain.stop();
  }
}

main().then(
  (status) => process.exit(status),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
