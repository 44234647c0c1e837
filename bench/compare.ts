import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { projectRoot } from '../config/config';
import { writeDocSection } from '../scripts/lib/doc-section';
import type { BenchResults, PhaseResult } from './results';
import { ratio } from './stats';

// `node dist/bench/compare.js [--docs]`: the dev server's run (bench/results.json) and the
// cluster's (bench/results-cluster.json) side by side, per worker count.

const ms = (x: number) => (x >= 100 ? String(Math.round(x)) : x.toFixed(1));

function row(label: string, dev: string | number, cluster: string | number): string {
  return `| ${label} | ${dev} | ${cluster} |`;
}

function rows(workers: number, dev: PhaseResult, cluster: PhaseResult): string[] {
  const out: string[] = [];
  for (const d of dev.submit) {
    const c = cluster.submit.find((s) => s.concurrency === d.concurrency);
    if (!c) continue;
    const w = `${workers} worker${workers > 1 ? 's' : ''}, ${d.concurrency} clients`;
    out.push(
      row(`submit req/s, API / direct (${w})`, `${d.api.opsPerSec} / ${d.direct.opsPerSec}`, `${c.api.opsPerSec} / ${c.direct.opsPerSec}`),
    );
    out.push(
      row(`submit p99 ms, API / direct (${w})`, `${ms(d.api.p99Ms)} / ${ms(d.direct.p99Ms)}`, `${ms(c.api.p99Ms)} / ${ms(c.direct.p99Ms)}`),
    );
  }
  for (const d of dev.whitelist ?? []) {
    const c = cluster.whitelist?.find((s) => s.size === d.size);
    if (!c) continue;
    const w = `${workers} worker${workers > 1 ? 's' : ''}, ${d.size} change${d.size > 1 ? 's' : ''}`;
    out.push(
      row(
        `batch p50 ms / empty workflow p50 ms = batch/floor (${w})`,
        `${ms(d.api.p50Ms)} / ${ms(d.empty.p50Ms)} = ${ratio(d.api.p50Ms, d.empty.p50Ms)}`,
        `${ms(c.api.p50Ms)} / ${ms(c.empty.p50Ms)} = ${ratio(c.api.p50Ms, c.empty.p50Ms)}`,
      ),
    );
    out.push(row(`batch: Temporal server (queues, persistence) ms (${w})`, ms(d.timeline.serverMs), ms(c.timeline.serverMs)));
  }
  out.push(
    row(
      `worker peak RSS MB, submit / whitelist (${workers} worker${workers > 1 ? 's' : ''})`,
      `${dev.memory.submit.workerMb} / ${dev.memory.whitelist?.workerMb ?? '-'}`,
      `${cluster.memory.submit.workerMb} / ${cluster.memory.whitelist?.workerMb ?? '-'}`,
    ),
  );
  return out;
}

export function renderComparison(dev: BenchResults, cluster: BenchResults): string {
  const lines = [
    `Dev server run ${dev.date} (load average ${dev.machine.loadAverage.start} → ${dev.machine.loadAverage.end}); cluster run ${cluster.date} (load average ${cluster.machine.loadAverage.start} → ${cluster.machine.loadAverage.end}); ${cluster.machine.cpus} vCPU (${cluster.machine.cpuModel}).`,
    '',
    '| measure | dev server (SQLite) | Temporal server on PostgreSQL |',
    '| --- | --- | --- |',
  ];
  for (const d of dev.phases) {
    const c = cluster.phases.find((p) => p.workers === d.workers);
    if (c) lines.push(...rows(d.workers, d, c));
  }
  return lines.join('\n');
}

function main(): void {
  const { values } = parseArgs({
    options: {
      dev: { type: 'string', default: path.join(projectRoot, 'bench', 'results.json') },
      cluster: { type: 'string', default: path.join(projectRoot, 'bench', 'results-cluster.json') },
      docs: { type: 'boolean', default: false },
    },
  });
  const read = (file: string) => JSON.parse(readFileSync(file, 'utf8')) as BenchResults;
  const text = renderComparison(read(values.dev), read(values.cluster));
  console.log(text);
  if (values.docs && !writeDocSection(path.join(projectRoot, 'docs', 'performance.md'), 'bench-compare', text)) {
    console.error('docs/performance.md has no bench-compare markers');
    process.exit(1);
  }
}

if (require.main === module) main();
