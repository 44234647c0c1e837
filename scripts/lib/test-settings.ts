import { envSettingsOf } from '../../config/read-settings';
import { type SettingsTable } from '../../config/setting-row';

/** The tests' own settings (seeds, scales, the Temporal topology, fixture rewrites): one row each, parsed like the service's (config/settings.ts). */
export const TEST_SETTINGS = {
  TEST_TEMPORAL: {
    kind: 'enum',
    values: ['dev', 'cluster'],
    default: 'dev',
    readBy: 'tests',
    description: '`cluster`: run the stacks on the production topology (`npm run test:cluster`)',
  },
  LOAD_SCALE: {
    kind: 'number',
    min: 0.001,
    readBy: 'tests',
    description:
      'scales the load and overload tests (unset: the load test runs a quarter of its requests, the overload test all of them; `npm run test:long` sets 1)',
  },
  LOAD_SEED: { kind: 'integer', min: 0, readBy: 'tests', description: 'seed of the load tests (default: fixed per test)' },
  INTERLEAVINGS_RUNS: {
    kind: 'integer',
    min: 1,
    default: 5,
    readBy: 'tests',
    description: 'runs of the execution interleavings property test (6 executions each): 5 in `npm test`, 15 in `npm run test:long`',
  },
  LONG_FAULTS: {
    kind: 'enum',
    values: ['0', '1'],
    default: '0',
    readBy: 'tests',
    description: '`1`: the replicas fault test also loses each node in turn (over five minutes); set by `npm run test:long`',
  },
  CONTRACT_SEED: { kind: 'integer', min: 0, default: 12004, readBy: 'tests', description: 'seed of the OpenAPI contract test' },
  HOSTILE_SEED: { kind: 'integer', min: 0, default: 20260806, readBy: 'tests', description: 'seed of the hostile-input test' },
  CLUSTER_FAULT_CLIENTS: { kind: 'integer', min: 1, default: 6, readBy: 'tests', description: 'clients of the cluster fault test' },
  OPENAPI_SNAPSHOT: {
    kind: 'enum',
    values: ['write'],
    readBy: 'tests',
    description: '`write`: the OpenAPI snapshot test rewrites test/fixtures/openapi.json from the code instead of comparing',
  },
  STATUS_SCREENSHOT: {
    kind: 'enum',
    values: ['write'],
    readBy: 'tests',
    description:
      '`write`: the status page test (test/client/status-page.test.ts) writes docs/status-page.png (`npm run screenshot:status`)',
  },
  TEST_FILE_TIMES: {
    kind: 'string',
    readBy: 'tests',
    description: "a file the suite runner (`npm test`) hands each mocha process: the reporter appends each test file's wall time there",
  },
  RECORD_HISTORIES: {
    kind: 'string',
    readBy: 'tests',
    description: 'a tag: the replay test records fresh fixture histories under it (test/fixtures/histories)',
  },
} as const satisfies SettingsTable;

/** This process's tests settings, parsed once. */
export const testSettings = () => envSettingsOf(TEST_SETTINGS);
