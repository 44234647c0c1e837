/**
 * `npm run bench:tracing [-- --submits N] [--rounds N]`: case 1 (submit through the API) with
 * tracing unset and with tracing on at a 100 % sampler, side by side. Each round starts a stack
 * without the OTEL_* variables, measures, stops it, then the same with every process (API, worker,
 * nodes) exporting http/protobuf to an OTLP receiver in this process that takes and drops the
 * spans (it counts them in bytes). Prints one Markdown table: submit req/s, p50 and p99 through
 * the API, and the API's CPU per request, per count of concurrent clients.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { runSubmitCase } from './cases/submit';
import { JsonClient } from './http';
import { CONCURRENCIES } from './phase';
import { startBenchStack } from './stack';
import { summarise, type Summary } from './stats';

interface Row {
  tracing: 'unset' | 'on, 100 %';
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

async function measure(tracing: Row['tracing'], round: number, submits: number, env: Record<string, string> | undefined): Promise<Row[]> {
  const stack = await startBenchStack({ log: say, env, nodeEnv: env });
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

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { submits: { type: 'string', default: '120' }, rounds: { type: 'string', default: '1' } } });
  const submits = Number(values.submits);
  const rounds = Number(values.rounds);
  if (!(Number.isInteger(submits) && submits > 0 && Number.isInteger(rounds) && rounds > 0))
    throw new Error('usage: npm run bench:tracing [-- --submits N] [--rounds N]');
  const sink = await startSink();
  const traced = {
    OTEL_EXPORTER_OTLP_ENDPOINT: sink.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
    OTEL_TRACES_SAMPLER: 'always_on',
  };
  const rows: Row[] = [];
  try {
    for (let round = 1; round <= rounds; round++) {
      rows.push(...(await measure('unset', round, submits, undefined)));
      rows.push(...(await measure('on, 100 %', round, submits, traced)));
    }
  } finally {
    await sink.close();
  }
  const { requests, kb } = sink.exports();
  if (requests === 0) throw new Error('tracing on, but no span reached the receiver');
  const lines = [
    `${submits} submits per run through the API, ${rounds} round(s); tracing on: every process exports http/protobuf to a local receiver (${requests} exports, ${kb} KB in all)`,
    '',
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
  console.log(lines.join('\n'));
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(`bench:tracing failed: ${(err as Error).stack ?? err}`);
    process.exit(1);
  },
);
