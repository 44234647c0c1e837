import type { CurvePoint } from './cases/curve';
import type { Timeline } from './cases/timeline';
import type { VerifyResult } from './cases/verify';
import type { Summary } from './stats';
import type { HistoryCost } from './cases/history-cost';
import type { CpuSide, UpdateCpu } from './cases/submit';

/** What one `npm run bench` measured; bench/results.json holds the last one. */
export interface BenchResults {
  date: string;
  /** loadAverage: the 1-minute load average at the start and at the end (others' work on the machine). */
  machine: {
    cpus: number;
    cpuModel: string;
    memoryGb: number;
    node: string;
    platform: string;
    loadAverage: { start: number; end: number };
  };
  settings: {
    /** The Temporal the stack ran on: the dev server (SQLite) or the production topology's server (PostgreSQL); absent in older files: dev. */
    temporal?: 'dev' | 'cluster';
    submitsPerSide: number;
    batchesPerSide: number;
    concurrencies: number[];
    batchSizes: number[];
    workerCounts: number[];
    /** Dev server dynamic config given with --server-config (none: temporal-dev.yaml's alone). */
    serverConfig: Record<string, unknown>;
  };
  verify: VerifyResult;
  phases: PhaseResult[];
  /** Case 3 as a curve (`--curve`), with every worker of the last phase running. */
  curve?: { workers: number; batchesPerPoint: number; points: CurvePoint[] };
  durationS: number;
}

export interface Side extends Summary {
  errors: number;
  firstError?: string;
}

export interface PhaseResult {
  workers: number;
  /** apiCpuMsPerRequest: CPU time of the API process per submit (its own cost, whatever the server's). */
  /**
   * floor: the same Update to a workflow that only answers it; floorParts: to one that also
   * upserts the ExecutionState search attribute, and also runs one activity.
   */
  submit: Array<{
    concurrency: number;
    api: Side;
    direct: Side;
    floor?: Side;
    floorParts?: { searchAttribute: Side; activity: Side; close?: Side };
    apiCpuMsPerRequest: number;
    /** CPU ms per Update of the server, the side's worker and the API (absent in older results). */
    cpu?: Record<CpuSide, UpdateCpu>;
  }>;
  /** What one execution from prepare to SIGNING costs the server (its history; absent in older results). */
  executionCost?: HistoryCost;
  /** `timeline`: where the API batches' time went, from a sample of their histories; `empty`: a workflow that does nothing (the floor). */
  /** Absent with `--cases submit`. */
  whitelist?: Array<{
    size: number;
    api: Side;
    direct: Side;
    empty: Side;
    /** The empty workflow whose Update waits for one no-op local activity: the least a batch can be (absent in older results). */
    oneLocalActivity?: Side;
    /** The same batches with one copy of each entry (STORAGE_REPLICAS=1; `api` has the default, 3); absent in older results. */
    apiOneCopy?: Side;
    timeline: Timeline;
    /** The same split for the empty workflows of the same run (absent in older results). */
    emptyTimeline?: Timeline;
    apiCpuMsPerBatch: number;
  }>;
  /** Batches of `size` through the API from `concurrency` clients: throughput for the scale table. */
  whitelistThroughput?: { size: number; concurrency: number; batches: number; api: Side };
  /** Peak RSS (MB) during case 1 and during case 3; workers: the largest worker process. */
  memory: { submit: { apiMb: number; workerMb: number }; whitelist?: { apiMb: number; workerMb: number } };
}
