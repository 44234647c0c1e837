import type { Client } from '@temporalio/client';
import { runSubmitCase } from './cases/submit';
import { settledHistoryCost } from './cases/history-cost';
import { batchTimeline, floorTimeline } from './cases/timeline';
import { runWhitelistCase, runWhitelistThroughput } from './cases/whitelist';
import type { JsonClient } from './http';
import type { LoadResult } from './load';
import { PeakRss } from './proc';
import type { PhaseResult, Side } from './results';
import type { BenchStack } from './stack';
import { summarise } from './stats';

// One phase of the bench: cases 1 and 3 (and the batch throughput of case 5) against the stack
// as it is (one worker process, then two), with the peak RSS of the API and the workers (case 4).

export const CONCURRENCIES = [10, 50];
export const BATCH_SIZES = [1, 10, 100];
const THROUGHPUT = { size: 10, concurrency: 8, batches: 32 };
/** Untimed rounds of case 3 (each side once per round) before its timed ones. */
const SETTLE_ROUNDS = 4;
/** Batches per size whose histories are read for the timeline. */
const TIMELINE_SAMPLE = 10;

function side(run: LoadResult): Side {
  return { ...summarise(run.latenciesMs, run.wallMs), errors: run.errors, ...(run.firstError ? { firstError: run.firstError } : {}) };
}

export async function runPhase(
  stack: BenchStack,
  http: JsonClient,
  client: Client,
  opts: { submits: number; batches: number; submitOnly?: boolean },
  say: (line: string) => void,
): Promise<PhaseResult> {
  const workers = stack.workers.length;
  const pids = () => [stack.api.pid, ...stack.workers.map((w) => w.pid)];
  const peaks = (m: Map<number, number>) => ({
    apiMb: m.get(stack.api.pid)!,
    workerMb: Math.max(...stack.workers.map((w) => m.get(w.pid)!)),
  });

  say(`${workers} worker(s): warm-up`);
  await runSubmitCase(stack, http, client, 10, 10);
  if (!opts.submitOnly) await runWhitelistCase(stack, http, client, 10, 2);

  const submitMem = new PeakRss(pids()).start();
  const submit: PhaseResult['submit'] = [];
  let sample = '';
  for (const concurrency of CONCURRENCIES) {
    say(`${workers} worker(s): case 1, ${opts.submits} submits per side, ${concurrency} clients`);
    const runs = await runSubmitCase(stack, http, client, concurrency, opts.submits);
    say(`  (setup ${Math.round(runs.setupMs / 1000)} s)`);
    sample ||= runs.sampleWorkflowId;
    submit.push({
      concurrency,
      api: side(runs.api),
      direct: side(runs.direct),
      floor: side(runs.floor),
      floorParts: {
        searchAttribute: side(runs.floorParts.searchAttribute),
        activity: side(runs.floorParts.activity),
        close: side(runs.floorParts.close),
      },
      apiCpuMsPerRequest: runs.apiCpuMsPerRequest,
      cpu: runs.cpu,
    });
  }
  const executionCost = await settledHistoryCost(client, sample);
  const submitPeaks = peaks(submitMem.stop());
  // `--cases submit`: case 1 alone, for measuring what a status change costs.
  if (opts.submitOnly) return { workers, submit, executionCost, memory: { submit: submitPeaks } };

  const whitelistMem = new PeakRss(pids()).start();
  // A few untimed rounds first: the first batches after case 1's 50 clients took 0.5-1.4 s on all
  // sides alike (the server and the workers still finishing case 1), which made the
  // 1-change rows' p99 a measure of case 1.
  await runWhitelistCase(stack, http, client, 1, SETTLE_ROUNDS);
  const whitelist: PhaseResult['whitelist'] = [];
  for (const size of BATCH_SIZES) {
    say(`${workers} worker(s): case 3, ${opts.batches} batches of ${size} per side`);
    const runs = await runWhitelistCase(stack, http, client, size, opts.batches);
    const timeline = await batchTimeline(client, runs.apiBatches.slice(-TIMELINE_SAMPLE));
    const emptyTimeline = await floorTimeline(client, runs.emptyRuns.slice(-TIMELINE_SAMPLE));
    whitelist.push({
      size,
      api: side(runs.api),
      direct: side(runs.direct),
      empty: side(runs.empty),
      oneLocalActivity: side(runs.oneLocalActivity),
      apiOneCopy: side(runs.apiOneCopy),
      timeline,
      emptyTimeline,
      apiCpuMsPerBatch: runs.apiCpuMsPerBatch,
    });
  }
  say(`${workers} worker(s): case 5, batches of ${THROUGHPUT.size} from ${THROUGHPUT.concurrency} clients`);
  const tput = await runWhitelistThroughput(stack, http, THROUGHPUT.size, THROUGHPUT.batches, THROUGHPUT.concurrency);
  const whitelistPeaks = peaks(whitelistMem.stop());

  return {
    workers,
    submit,
    executionCost,
    whitelist,
    whitelistThroughput: { ...THROUGHPUT, api: side(tput) },
    memory: { submit: submitPeaks, whitelist: whitelistPeaks },
  };
}
