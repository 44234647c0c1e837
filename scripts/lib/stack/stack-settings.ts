/**
 * Service settings every throwaway stack (tests, benches) gives its workers and APIs: one client
 * address sends everything there, and the suites keep more executions open than production would.
 */
export const STACK_SERVICE_SETTINGS: Readonly<Record<string, string>> = {
  // One client address sends everything here: the rate limits have tests of their own.
  RATE_LIMIT_PER_IP: '0',
  RATE_LIMIT_PER_WALLET: '0',
  RATE_LIMIT_PER_TOKEN: '0',
  RATE_LIMIT_AUTH_FAILURES_PER_IP: '0',
  SSE_MAX_STREAMS_PER_CLIENT: '100000',
  // Admission is counted on every prepare but refuses none here: its tests set their own bounds,
  // and the suite keeps more executions open than a worker's cache (docs/decisions/0082).
  CAPACITY_OPEN_RUNS: '100000',
  // Nor does a worker hold back new runs (docs/decisions/0107): one worker serves the whole suite.
  WORKER_OPEN_RUNS: '0',
  CAPACITY_PER_WALLET: '100000',
};

/** Every scope a token of the service can hold: the token of a throwaway stack that may do anything. */
export const EVERY_SCOPE: readonly string[] = [
  'executions:prepare',
  'executions:deposit',
  'whitelist:*',
  'refunds:read',
  'refunds:write',
  'refunds:approve',
];
