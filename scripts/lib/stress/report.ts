import type { CachePressureReport } from './cache-pressure';

const counts = (o: Record<string, number>) =>
  Object.entries(o)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ') || '0';

/** One run, in full: what the table of several runs leaves out. */
export function reportLines(r: CachePressureReport): string[] {
  const c = r.worker.cacheCounters;
  return [
    `cache pressure: ${r.executions} executions (${r.pending} of them never signed, so open throughout), cache ${r.cache}, linger ${r.lingerSeconds} s`,
    `  workers: ${r.workers}${r.killedWorker ? ` (the last SIGKILLed halfway through the load)` : ''}; open runs peak ${r.openRunsPeak.held} (held by the workers at once; ${r.openRunsPeak.running} running on the server at once); cache peak per worker ${r.cachePeaks.join(', ')}`,
    `  admission: ${admission(r)}; prepares refused CAPACITY_FULL ${r.refused.setup} before the load, ${r.refused.load} during it; ${r.admittedDuringLoad} admitted during it`,
    `  load: ceiling ${r.ceiling.toFixed(1)} req/s (closed loop), open loop at ${r.rate.toFixed(1)} req/s: ${r.requests} requests answered after ${r.seconds.toFixed(1)} s; signals ${r.signals.sent} sent, ${r.signals.failed} refused; expiring executions found EXPIRED: ${r.expired}`,
    ...r.figures.map((l) => `    ${l}`),
    `  API errors logged (its 500s): ${JSON.stringify(r.apiErrors)}`,
    `  stranded: ${r.stranded} (task at attempt >= 3: ${r.wedged.length}, ${r.wedgedAtLoadEnd.length} right after the load; acknowledged but not in the record after 60 s: ${r.invisible.length})`,
    ...[...r.wedged, ...r.invisible].slice(0, 10).map((l) => `    ${l}`),
    `  workflow tasks timed out: ${counts(r.tasks.timedOut)}; failed: ${counts(r.tasks.failed)}; on ${r.tasks.executions} executions`,
    `  worker: sticky cache peak ${r.worker.cachePeak}, ${counts(c)}; peak RSS ${r.worker.peakRssMb.toFixed(0)} MB`,
    `  core lines: "Extra buffered run…" ${r.worker.coreLines.extraBufferedRun}, "leftover buffered tasks…" ${r.worker.coreLines.leftoverBuffered}${r.worker.firstCoreLine ? `; first: ${r.worker.firstCoreLine}` : ''}; worker recreated ${r.worker.recreated} times`,
  ];
}

const admission = (r: CachePressureReport) =>
  r.workerOpenRuns !== undefined
    ? `WORKER_OPEN_RUNS ${r.workerOpenRuns} per worker, the API admits the live workers' sum less the largest`
    : `CAPACITY_OPEN_RUNS ${r.capacity ?? 'none'}`;

const sumOf = (o: Record<string, number>) => Object.values(o).reduce((a, b) => a + b, 0);
/** The core's counter whose name contains `part` (its exact name depends on the exporter's suffixes). */
const counter = (r: CachePressureReport, part: string) =>
  Object.entries(r.worker.cacheCounters)
    .filter(([name]) => name.includes(part))
    .reduce((n, [, v]) => n + v, 0);

/** A Markdown table, one row per run. */
export function reportTable(reports: readonly CachePressureReport[]): string {
  const head = [
    'executions',
    'workers',
    'cache',
    'capacity',
    'open runs peak',
    'refused',
    'linger s',
    'rate req/s',
    'load s',
    'stranded',
    'WFT timed out',
    'WFT failed',
    'cache peak',
    'forced evictions',
    'cache hits / misses',
    'peak RSS MB',
    'core lines',
    'worker recreated',
  ];
  const rows = reports.map((r) => [
    r.executions,
    `${r.workers}${r.killedWorker ? ' (1 killed)' : ''}`,
    r.cache,
    r.workerOpenRuns !== undefined ? `${r.workerOpenRuns}/worker` : (r.capacity ?? 'none'),
    r.openRunsPeak.held,
    r.refused.setup + r.refused.load,
    r.lingerSeconds,
    r.rate.toFixed(1),
    r.seconds.toFixed(0),
    r.stranded,
    `${sumOf(r.tasks.timedOut)} (${counts(r.tasks.timedOut)})`,
    sumOf(r.tasks.failed),
    r.worker.cachePeak,
    counter(r, 'forced_eviction'),
    `${counter(r, 'hit')} / ${counter(r, 'miss')}`,
    r.worker.peakRssMb.toFixed(0),
    r.worker.coreLines.extraBufferedRun + r.worker.coreLines.leftoverBuffered,
    r.worker.recreated,
  ]);
  return [head, head.map(() => '---'), ...rows].map((cells) => `| ${cells.join(' | ')} |`).join('\n');
}
