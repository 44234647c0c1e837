import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { ChildService } from '../child-service';
import { scrape, type Sample } from '../prometheus-samples';

/**
 * The two lines the Temporal core logs when a run's buffered tasks went astray under a full cache
 * (a warning and, in a release build, an error instead of a panic). A run that met them may stop
 * answering until the worker restarts, so a stress run counts them.
 */
export const CORE_LINES = {
  extraBufferedRun: 'Extra buffered run should not have produced an activation',
  leftoverBuffered: 'leftover buffered tasks when evicting run',
} as const;

export interface WorkerFigures {
  /** How many times the worker logged each core line. */
  coreLines: Record<keyof typeof CORE_LINES, number>;
  /** The first of those lines, as logged. */
  firstCoreLine?: string;
  /** Largest `temporal_sticky_cache_size` seen while sampling. */
  cachePeak: number;
  /** The core's cache counters at the end (`temporal_sticky_cache_*` counters, summed over labels). */
  cacheCounters: Record<string, number>;
  /** Peak resident set of the worker process (VmHWM), MB. */
  peakRssMb: number;
  /** Times the worker recreated itself after the core wedged a run (`intent_worker_core_wedges_total`). */
  recreated: number;
}

/**
 * Watches the worker child of a stack: its output for the core lines, its metrics endpoint for the
 * sticky cache (sampled every `everyMs`: the size is a gauge, its peak is what a full cache shows)
 * and its /proc status for memory. `stop()` takes the last sample and returns the figures.
 */
export function watchWorker(
  worker: ChildService,
  metricsUrl: string,
  everyMs = 2000,
): { stop(): Promise<WorkerFigures>; cacheSize(): number } {
  const coreLines = { extraBufferedRun: 0, leftoverBuffered: 0 };
  let firstCoreLine: string | undefined;
  for (const stream of [worker.child.stdout!, worker.child.stderr!]) {
    createInterface({ input: stream }).on('line', (line) => {
      for (const key of Object.keys(CORE_LINES) as Array<keyof typeof CORE_LINES>) {
        if (!line.includes(CORE_LINES[key])) continue;
        coreLines[key]++;
        firstCoreLine ??= line.slice(0, 500);
      }
    });
  }
  let cachePeak = 0;
  let cacheNow = 0;
  let last: Sample[] = [];
  const sample = async () => {
    const samples = await scrape(metricsUrl).catch(() => undefined);
    // A worker that stopped answering (killed) holds nothing any more.
    cacheNow = samples ? sum(samples, 'temporal_sticky_cache_size') : 0;
    if (!samples) return;
    last = samples;
    cachePeak = Math.max(cachePeak, cacheNow);
  };
  const timer = setInterval(() => void sample(), everyMs);
  return {
    /** The cache's size at the last sample (0 once the worker stopped answering). */
    cacheSize: () => cacheNow,
    async stop() {
      clearInterval(timer);
      await sample();
      const cacheCounters: Record<string, number> = {};
      for (const s of last) {
        if (s.name.startsWith('temporal_sticky_cache') && s.name !== 'temporal_sticky_cache_size')
          cacheCounters[s.name] = (cacheCounters[s.name] ?? 0) + s.value;
      }
      return {
        coreLines,
        firstCoreLine,
        cachePeak,
        cacheCounters,
        peakRssMb: peakRssMb(worker.child.pid),
        recreated: sum(last, 'intent_worker_core_wedges_total'),
      };
    },
  };
}

function sum(samples: Sample[], name: string): number {
  return samples.filter((s) => s.name === name).reduce((n, s) => n + s.value, 0);
}

/** VmHWM of a live process (Linux), in MB; NaN when it cannot be read. */
function peakRssMb(pid: number | undefined): number {
  try {
    const kb = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? NaN : Number(kb) / 1024;
  } catch {
    return NaN;
  }
}
