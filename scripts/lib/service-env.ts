/**
 * Environment for the API and worker processes that `npm start` and `npm run bench` launch (the
 * caller's own environment wins, so an operator can still override each value).
 *
 * MALLOC_ARENA_MAX=2: Temporal Core runs many threads, and glibc's per-thread malloc arenas cost
 * the worker about 50 MB of RSS for nothing (npm run bench: 395 → 347 MB after 600 executions).
 * It must be set before the process starts; `npm run worker` / `npm run api` set it the same way.
 */
export const SERVICE_PROCESS_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2' };
