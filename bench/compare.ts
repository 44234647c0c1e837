import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { projectRoot } from '../config/config';
import { writeDocSection } from '../scripts/lib/doc-section';
import type { BenchResults, PhaseResult } from './results';
import { ratio } from './stats';
import { renderTables } from './table';

// `node dist/bench/compare.js [--docs]`: the dev server's run (bench/results.json) and the
// cluster's (bench/results-cluster.json) side by side, one worker process; with --docs, the summary
// and this table go into docs/performance.md and the dev server run's tables into
// docs/bench-tables.md, so that the pages show the committed results.

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

/** `lo–hi` of `values` at one decimal (or `x` when they round alike). */
function span(values: number[]): string {
  const [lo, hi] = [Math.min(...values), Math.max(...values)].map((x) => x.toFixed(1));
  return lo === hi ? lo : `${lo}–${hi}`;
}

/** What bounds a submit, in words, with the ranges of every case 1 row of both runs. */
export function renderSubmitBound(dev: BenchResults, cluster: BenchResults): string {
  const rowsOf = [...dev.phases, ...cluster.phases].flatMap((p) => p.submit);
  const full = rowsOf.flatMap((r) => (r.floor && r.floorParts ? [{ ...r, floor: r.floor, floorParts: r.floorParts }] : []));
  if (full.length === 0) return '';
  return [
    'On this machine a submit is bounded by the Temporal server. The same Update sent straight from',
    `\`@temporalio/client\` runs at ${span(rowsOf.map((r) => r.direct.opsPerSec / r.api.opsPerSec))} times the API's rate (the API's`,
    `${span(rowsOf.map((r) => r.apiCpuMsPerRequest))} ms of CPU per submit comes out of the same two cores); an Update to a workflow`,
    'that upserts the `ExecutionState` search attribute and runs one activity, as a status change did',
    'before the API took over the read model\'s write ("A status change" below;',
    '[decision 0073](decisions/0073-a-status-change-costs-its-update.md)), runs at',
    `${span(full.map((r) => r.floorParts.activity.opsPerSec / r.direct.opsPerSec))} times the execution's rate; an Update to a workflow that only`,
    `answers it, at ${span(full.map((r) => r.floor.opsPerSec / r.api.opsPerSec))} times the API's.`,
  ].join(' ');
}

/**
 * The first screen of docs/performance.md: what a deployment on this machine can expect, one
 * worker process, from each run's committed results.
 */
export function renderSummary(dev: BenchResults, cluster: BenchResults): string {
  const [d, c] = [dev.phases.find((p) => p.workers === 1), cluster.phases.find((p) => p.workers === 1)];
  if (!d || !c) return '';
  const lines = ['| one worker process | dev server (SQLite) | Temporal server on PostgreSQL |', '| --- | --- | --- |'];
  for (const ds of d.submit) {
    const cs = c.submit.find((s) => s.concurrency === ds.concurrency);
    if (!cs) continue;
    lines.push(row(`submits/s through the API, ${ds.concurrency} clients`, ds.api.opsPerSec, cs.api.opsPerSec));
    lines.push(
      row(
        `submit p50 / p99 ms, ${ds.concurrency} clients`,
        `${ms(ds.api.p50Ms)} / ${ms(ds.api.p99Ms)}`,
        `${ms(cs.api.p50Ms)} / ${ms(cs.api.p99Ms)}`,
      ),
    );
  }
  // What the server allows at the highest concurrency: an Update alone, and with the two things a
  // status change makes it do (a search attribute, an activity).
  const top = d.submit.at(-1);
  const topC = c.submit.find((s) => s.concurrency === top?.concurrency);
  if (top?.floor && top.floorParts && topC?.floor && topC.floorParts) {
    lines.push(
      row(
        `the same Update to a workflow that only answers it, ${top.concurrency} clients, req/s`,
        top.floor.opsPerSec,
        topC.floor.opsPerSec,
      ),
      row(
        `… that also upserts a search attribute and runs one activity, as a status change did before decision 0073, ${top.concurrency} clients, req/s`,
        top.floorParts.activity.opsPerSec,
        topC.floorParts.activity.opsPerSec,
      ),
    );
  }
  for (const dw of d.whitelist ?? []) {
    const cw = c.whitelist?.find((w) => w.size === dw.size);
    if (!cw) continue;
    lines.push(
      row(
        `whitelist batch of ${dw.size}, p50 / p99 ms, one client`,
        `${ms(dw.api.p50Ms)} / ${ms(dw.api.p99Ms)}`,
        `${ms(cw.api.p50Ms)} / ${ms(cw.api.p99Ms)}`,
      ),
    );
  }
  const dm = d.memory;
  const cm = c.memory;
  lines.push(
    row(
      'peak RSS MB, API / worker',
      `${dm.submit.apiMb} / ${Math.max(dm.submit.workerMb, dm.whitelist?.workerMb ?? 0)}`,
      `${cm.submit.apiMb} / ${Math.max(cm.submit.workerMb, cm.whitelist?.workerMb ?? 0)}`,
    ),
  );
  return [
    `Measured ${dev.date.slice(0, 10)} (dev server) and ${cluster.date.slice(0, 10)} (cluster) on ${dev.machine.cpus} vCPU (${dev.machine.cpuModel}), ${dev.machine.memoryGb} GB, Node ${dev.machine.node}, everything on the one machine (Temporal, PostgreSQL, the API, the worker, three storage nodes and the load).`,
    '',
    ...lines,
    '',
    renderSubmitBound(dev, cluster),
  ].join('\n');
}

export function renderComparison(dev: BenchResults, cluster: BenchResults): string {
  const lines = [
    `Dev server run ${dev.date} (load average ${dev.machine.loadAverage.start} → ${dev.machine.loadAverage.end}); cluster run ${cluster.date} (load average ${cluster.machine.loadAverage.start} → ${cluster.machine.loadAverage.end}); ${cluster.machine.cpus} vCPU (${cluster.machine.cpuModel}).`,
    '',
    '| measure | dev server (SQLite) | Temporal server on PostgreSQL |',
    '| --- | --- | --- |',
  ];
  // One worker process: what a second one adds is case 5 of each run's tables.
  const [d, c] = [dev.phases.find((p) => p.workers === 1), cluster.phases.find((p) => p.workers === 1)];
  if (d && c) lines.push(...rows(1, d, c));
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
  const [dev, cluster] = [read(values.dev), read(values.cluster)];
  const text = renderComparison(dev, cluster);
  console.log(text);
  if (!values.docs) return;
  for (const [page, section, body] of [
    ['performance.md', 'bench-summary', renderSummary(dev, cluster)],
    ['performance.md', 'bench-compare', text],
    // The curve's table is left out: the page shows it as docs/bench-curve.svg.
    ['bench-tables.md', 'bench-table', renderTables({ ...dev, curve: undefined })],
  ] as const) {
    if (!writeDocSection(path.join(projectRoot, 'docs', page), section, body)) {
      console.error(`docs/${page} has no ${section} markers`);
      process.exit(1);
    }
  }
}

if (require.main === module) main();
