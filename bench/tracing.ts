/**
 * `npm run bench:tracing [-- --submits N] [--rounds N] [--baseline DIR] [--docs]`: case 1 (submit
 * through the API) with tracing unset and with tracing on at a 100 % sampler, side by side. Each
 * side starts a stack, measures, and stops it: without the OTEL_* variables, then with every
 * process (API, worker, nodes) exporting http/protobuf to an OTLP receiver in this process that
 * takes and drops the spans (it counts them in bytes). `--baseline DIR`: a third side, unset, whose
 * API, worker and nodes run from DIR's build (another commit's checkout, built): what unset costs
 * against a build without the tracing code. The sides' order turns each round, so a drift of the
 * machine falls on each side alike. Prints every run, then the median of the rounds per side.
 */
import { execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { projectRoot } from '../config/config';
import { writeDocSection } from '../scripts/lib/doc-section';
import { runSubmitCase } from './cases/submit';
import { JsonClient } from './http';
import { CONCURRENCIES } from './phase';
import { startBenchStack } from './stack';
import { quantile, summarise, type Summary } from './stats';

interface Side {
  /** What the tables call it. */
  name: string;
  /** OTEL_* of the API, worker and nodes; undefined: unset. */
  env?: Record<string, string>;
  /** Whose build runs (default: this one's). */
  serviceRoot?: string;
}

interface Row {
  tracing: string;
  round: number;
  concurrency: number;
  api: Summary;
  apiCpuMsPerRequest: number;
}

const t0 = Date.now();
const say = (line: string) =>
  process.stderr.write(`[bench:tracing ${String(Math.round((Date.now() - t0) / 1000)).padStart(3)} s] ${line}\n`);

/** An OTLP/HTTP endpoint that answers every export 200 and keeps only its size. */
async function startSink(): Promise<{ url: string; exports: () => { requests: number; kb: number }; close: () => Promise<void> }> {
  let requests = 0;
  let bytes = 0;
  const server = createServer((req, res) => {
    req.on('data', (c: Buffer) => (bytes += c.length));
    req.on('end', () => {
      requests++;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    exports: () => ({ requests, kb: Math.round(bytes / 1024) }),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function measure(side: Side, round: number, submits: number): Promise<Row[]> {
  const tracing = side.name;
  const stack = await startBenchStack({ log: say, env: side.env, nodeEnv: side.env, serviceRoot: side.serviceRoot });
  const http = new JsonClient(64);
  let connection: Connection | undefined;
  try {
    connection = await Connection.connect({ address: stack.temporalAddress });
    const client = new Client({ connection, namespace: 'default' });
    say(`tracing ${tracing}: warm-up`);
    await runSubmitCase(stack, http, client, 10, 10);
    const rows: Row[] = [];
    for (const concurrency of CONCURRENCIES) {
      say(`tracing ${tracing}: ${submits} submits through the API, ${concurrency} clients`);
      const runs = await runSubmitCase(stack, http, client, concurrency, submits);
      rows.push({
        tracing,
        round,
        concurrency,
        api: summarise(runs.api.latenciesMs, runs.api.wallMs),
        apiCpuMsPerRequest: runs.apiCpuMsPerRequest,
      });
      if (runs.api.errors > 0) say(`  ${runs.api.errors} errors (first: ${runs.api.firstError})`);
    }
    return rows;
  } finally {
    http.close();
    await connection?.close().catch(() => undefined);
    await stack.stop();
  }
}

const USAGE = 'usage: npm run bench:tracing [-- --submits N] [--rounds N] [--baseline DIR] [--docs]';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      submits: { type: 'string', default: '120' },
      rounds: { type: 'string', default: '1' },
      baseline: { type: 'string' },
      docs: { type: 'boolean', default: false },
    },
  });
  const submits = Number(values.submits);
  const rounds = Number(values.rounds);
  if (!(Number.isInteger(submits) && submits > 0 && Number.isInteger(rounds) && rounds > 0)) throw new Error(USAGE);
  const sink = await startSink();
  const sides: Side[] = [
    { name: 'unset' },
    {
      name: 'on, 100 %',
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf', OTEL_TRACES_SAMPLER: 'always_on' },
    },
  ];
  let baselineRev: string | undefined;
  if (values.baseline) {
    const root = path.resolve(values.baseline);
    baselineRev = execFileSync('git', ['-C', root, 'describe', '--always', '--dirty'], { encoding: 'utf8' }).trim();
    sides.unshift({ name: `unset, build ${baselineRev}`, serviceRoot: root });
  }
  const rows: Row[] = [];
  try {
    for (let round = 1; round <= rounds; round++) {
      // Round 1 runs the sides in order, round 2 one later, and so on.
      for (let i = 0; i < sides.length; i++) rows.push(...(await measure(sides[(i + round - 1) % sides.length], round, submits)));
    }
  } finally {
    await sink.close();
  }
  const { requests, kb } = sink.exports();
  if (requests === 0) throw new Error('tracing on, but no span reached the receiver');
  const median = (xs: number[]) =>
    quantile(
      [...xs].sort((a, b) => a - b),
      0.5,
    );
  const thisRev = execFileSync('git', ['-C', projectRoot, 'describe', '--always', '--dirty'], { encoding: 'utf8' }).trim();
  const command = `npm run bench:tracing -- --submits ${submits} --rounds ${rounds}${values.baseline ? ' --baseline DIR' : ''}`;
  const medians = [
    `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, ${os.cpus().length} CPUs, build ${thisRev}${baselineRev ? ` beside build ${baselineRev} (DIR)` : ''}; \`${command}\`: ${submits} submits per run, the median of ${rounds} round(s); tracing on exports http/protobuf from every process to a local receiver (${requests} exports, ${kb} KB in all)`,
    '',
    '| clients | tracing | submit req/s (lowest–highest round) | p50 ms | p99 ms (lowest–highest round) | API CPU ms/request |',
    '|---|---|---|---|---|---|',
    ...CONCURRENCIES.flatMap((c) =>
      sides.map((side) => {
        const of = rows.filter((r) => r.concurrency === c && r.tracing === side.name);
        const round1 = (x: number) => Math.round(x * 10) / 10;
        const m = (f: (r: Row) => number) => round1(median(of.map(f)));
        // The spread of the rounds beside the median: a difference between sides inside it is noise.
        const spread = (f: (r: Row) => number) =>
          of.length > 1 ? ` (${round1(Math.min(...of.map(f)))}–${round1(Math.max(...of.map(f)))})` : '';
        return `| ${c} | ${side.name} | ${m((r) => r.api.opsPerSec)}${spread((r) => r.api.opsPerSec)} | ${m((r) => r.api.p50Ms)} | ${m((r) => r.api.p99Ms)}${spread((r) => r.api.p99Ms)} | ${m((r) => r.apiCpuMsPerRequest)} |`;
      }),
    ),
    '',
  ].join('\n');
  const runs = [
    '| clients | tracing | round | submit req/s | p50 ms | p99 ms | API CPU ms/request |',
    '|---|---|---|---|---|---|---|',
    ...CONCURRENCIES.flatMap((c) =>
      rows
        .filter((r) => r.concurrency === c)
        .map(
          (r) => `| ${c} | ${r.tracing} | ${r.round} | ${r.api.opsPerSec} | ${r.api.p50Ms} | ${r.api.p99Ms} | ${r.apiCpuMsPerRequest} |`,
        ),
    ),
  ];
  console.log(`${runs.join('\n')}\n\n${medians}`);
  if (values.docs) writeDocSection(path.join(projectRoot, 'docs', 'performance.md'), 'bench-tracing', medians);
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(`bench:tracing failed: ${(err as Error).stack ?? err}`);
    process.exit(1);
  },
);
