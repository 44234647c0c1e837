import { writeFileSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { projectRoot } from '../config/config';
import { SETTINGS } from '../config/settings';
import { runVerifyCase } from './cases/verify';
import { JsonClient } from './http';
import { BATCH_SIZES, CONCURRENCIES, runPhase } from './phase';
import type { BenchResults, PhaseResult } from './results';
import { startBenchStack, type BenchStack } from './stack';
import { round } from './stats';
import { writeDocSection } from '../scripts/lib/doc-section';
import { renderTables } from './table';
import { runCurve } from './cases/curve';
import { renderCurveSvg } from './curve-plot';

const USAGE = `npm run bench [-- --temporal dev|cluster] [--submits N] [--batches N] [--workers 1,2] [--profile] [--server-config KEY=JSON]... [--out FILE] [--cases all|submit] [--docs]
  --temporal dev (default): a Temporal dev server on SQLite; cluster: the production topology's
             server v1.29.1 on PostgreSQL (as npm run cluster; builds it once, needs PostgreSQL)
  --submits  submits per side per concurrency level (default 120)
  --batches  whitelist batches per side per size (default 30)
  --workers  worker process counts to run the cases with (default 1,2)
  --profile  run the API and workers with --cpu-prof into bench/profiles/
  --server-config  a dev server dynamic config value on top of temporal-dev.yaml's, to try one
             (e.g. history.transferProcessorMaxPollRPS=20)
  --out      results file (default bench/results.json; bench/results-cluster.json with --temporal cluster)
  --cases    all (default), or submit: case 1 alone (and case 2, which needs no stack)
  --service-root DIR  run the API, the workers and the storage nodes from DIR's built dist/ (another
             commit's build, e.g. a git worktree after npm run build), to measure it with this bench
  --curve N  also run case 3 as a curve: N batches per side for each size (1, 10, 100) and each
             count of concurrent clients (1, 2, 4, 8); with --docs also docs/bench-curve.svg
  --docs     also put the tables into docs/bench-tables.md (between its bench-table or bench-table-cluster markers)`;

const t0 = Date.now();
const say = (line: string) => process.stderr.write(`[bench ${String(Math.round((Date.now() - t0) / 1000)).padStart(3)} s] ${line}\n`);

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      temporal: { type: 'string', default: 'dev' },
      submits: { type: 'string', default: '120' },
      batches: { type: 'string', default: '30' },
      workers: { type: 'string', default: '1,2' },
      profile: { type: 'boolean', default: false },
      'server-config': { type: 'string', multiple: true, default: [] },
      out: { type: 'string' },
      docs: { type: 'boolean', default: false },
      curve: { type: 'string' },
      cases: { type: 'string', default: 'all' },
      'service-root': { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) return void console.log(USAGE);
  if (values.cases !== 'all' && values.cases !== 'submit') throw new Error(`--cases must be all or submit\n${USAGE}`);
  const opts = { submits: Number(values.submits), batches: Number(values.batches), submitOnly: values.cases === 'submit' };
  const temporal = values.temporal;
  if (temporal !== 'dev' && temporal !== 'cluster') throw new Error(`--temporal must be dev or cluster\n${USAGE}`);
  const out = values.out ?? path.join(projectRoot, 'bench', temporal === 'cluster' ? 'results-cluster.json' : 'results.json');
  const docsSection = temporal === 'cluster' ? 'bench-table-cluster' : 'bench-table';
  const workerCounts = values.workers.split(',').map(Number);
  if (
    ![opts.submits, opts.batches, ...workerCounts].every((n) => Number.isInteger(n) && n > 0) ||
    workerCounts.some((n, i) => i > 0 && n <= workerCounts[i - 1])
  ) {
    throw new Error(`bad arguments\n${USAGE}`);
  }
  const dynamicConfig = Object.fromEntries(
    values['server-config'].map((kv) => {
      const at = kv.indexOf('=');
      if (at < 1) throw new Error(`--server-config wants KEY=JSON, got ${kv}`);
      return [kv.slice(0, at), JSON.parse(kv.slice(at + 1))];
    }),
  );
  const started = Date.now();
  const loadAtStart = os.loadavg()[0];

  say('case 2: ed25519 verify (in this process, before the stack starts)');
  const verify = runVerifyCase();

  const profileDir = path.join(projectRoot, 'bench', 'profiles');
  if (values.profile) mkdirSync(profileDir, { recursive: true });
  // A signal stops whatever has started by then; one that comes while the stack is still starting
  // waits for it to be up, so that no child is left behind half-registered.
  let stopping: Promise<void> | undefined;
  let interrupted = false;
  const stopAll = (s: BenchStack) => (stopping ??= s.stop());
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      interrupted = true;
      say(`${signal}: stopping every child process`);
      void starting.then(stopAll, () => undefined).finally(() => process.exit(130));
    });
  }
  const starting = startBenchStack({
    temporal,
    log: say,
    dynamicConfig,
    // Case 1 keeps 2 × submits executions open on the service's workers and 4 × submits reference
    // workflows on the floor worker at once: each cache holds all of them, as admission makes the
    // service's do in production, so that no side measures replays of evicted runs.
    cachedWorkflows: {
      service: Math.max(SETTINGS.WORKER_CACHED_WORKFLOWS.default, 2 * opts.submits + 200),
      floor: 4 * opts.submits + 200,
    },
    nodeArgs: values.profile ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [],
    ...(values['service-root'] ? { serviceRoot: path.resolve(values['service-root']) } : {}),
  });
  const stack = await starting;
  if (interrupted) return new Promise<void>(() => undefined); // the signal handler exits
  const http = new JsonClient(64);
  let connection: Connection | undefined;
  try {
    connection = await Connection.connect({ address: stack.temporalAddress });
    const client = new Client({ connection, namespace: 'default' });
    const phases: PhaseResult[] = [];
    for (const count of workerCounts) {
      while (stack.workers.length < count) await stack.addWorker();
      phases.push(await runPhase(stack, http, client, opts, say));
    }
    const curveBatches = values.curve === undefined ? undefined : Number(values.curve);
    if (curveBatches !== undefined && !(Number.isInteger(curveBatches) && curveBatches > 0))
      throw new Error(`--curve wants a count\n${USAGE}`);
    const curve =
      curveBatches === undefined
        ? undefined
        : { workers: stack.workers.length, batchesPerPoint: curveBatches, points: await runCurve(stack, http, client, curveBatches, say) };
    const results: BenchResults = {
      date: new Date().toISOString(),
      machine: {
        cpus: os.cpus().length,
        cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown',
        memoryGb: Math.round(os.totalmem() / 2 ** 30),
        node: process.versions.node,
        platform: `${os.platform()} ${os.release()}`,
        loadAverage: { start: round(loadAtStart, 1), end: round(os.loadavg()[0], 1) },
      },
      settings: {
        temporal,
        submitsPerSide: opts.submits,
        batchesPerSide: opts.batches,
        concurrencies: CONCURRENCIES,
        batchSizes: BATCH_SIZES,
        workerCounts,
        serverConfig: dynamicConfig,
      },
      verify,
      phases,
      ...(curve ? { curve } : {}),
      durationS: Math.round((Date.now() - started) / 1000),
    };
    writeFileSync(out, JSON.stringify(results, null, 2) + '\n');
    const tables = renderTables(results);
    console.log(tables);
    say(`results written to ${path.relative(process.cwd(), out)}`);
    if (values.docs && curve) {
      const svg = path.join(projectRoot, 'docs', temporal === 'cluster' ? 'bench-curve-cluster.svg' : 'bench-curve.svg');
      writeFileSync(
        svg,
        renderCurveSvg(
          curve.points,
          `npm run bench -- --curve ${curve.batchesPerPoint}, ${results.date}, ${curve.workers} worker(s), Temporal ${temporal}`,
        ),
      );
      say(`curve written to ${path.relative(process.cwd(), svg)}`);
    }
    if (values.docs) {
      const page = path.join(projectRoot, 'docs', 'bench-tables.md');
      say(
        writeDocSection(page, docsSection, tables)
          ? 'tables written to docs/bench-tables.md'
          : `docs/bench-tables.md has no ${docsSection} markers; left as it was`,
      );
    }
  } catch (err) {
    if (interrupted) return;
    say(`failed; the last log lines of the service:\n${stack.logTails(20)}`);
    throw err;
  } finally {
    http.close();
    await connection?.close().catch(() => undefined);
    say('stopping the stack');
    await stopAll(stack);
    if (values.profile) say(`CPU profiles in ${profileDir} (summarise: node dist/bench/profile-summary.js FILE)`);
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(`bench failed: ${(err as Error).stack ?? err}`);
    process.exit(1);
  },
);
