/**
 * Environment for the API and worker processes that `npm start` and `npm run bench` launch (the
 * caller's own environment wins, so an operator can still override each value).
 *
 * MALLOC_ARENA_MAX=2: Temporal Core runs many threads, and glibc's per-thread malloc arenas cost
 * the worker about 50 MB of RSS for nothing (npm run bench: 395 → 347 MB after 600 executions).
 * It must be set before the process starts; `npm run worker` / `npm run api` set it the same way.
 */
export const SERVICE_PROCESS_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2' };

/**
 * Extra environment for the worker process only (again, the caller's environment wins).
 *
 * MALLOC_TRIM_THRESHOLD_ / MALLOC_MMAP_THRESHOLD_ = 128 KiB: glibc raises both thresholds
 * dynamically as the process frees large blocks, after which freed memory stays in the heap
 * instead of going back to the OS. Fixing them keeps the worker's RSS close to what it uses: in
 * back-to-back `npm run bench` runs the worker's peaks went from 298–364 MB to 242–268 MB, with
 * submit and batch figures within the run-to-run noise (docs/performance.md).
 */
export const WORKER_PROCESS_ENV: Readonly<Record<string, string>> = { MALLOC_TRIM_THRESHOLD_: '131072', MALLOC_MMAP_THRESHOLD_: '131072' };

/**
 * Node flags for the worker process (`npm start`, `npm run worker`, `npm run bench`).
 *
 * --max-semi-space-size=2 (MB): V8's young generation, in each of the worker's two isolates (the
 * main thread and the workflow thread), may otherwise grow to 3 × 16 MB under load and stay
 * resident. The worker allocates in small, short-lived pieces (activations), so the smaller
 * nursery costs it more frequent but cheap scavenges: npm run bench measured the peak RSS
 * 367 → 331 MB with the same throughput (docs/performance.md).
 */
export const WORKER_NODE_ARGS: readonly string[] = ['--max-semi-space-size=2'];
