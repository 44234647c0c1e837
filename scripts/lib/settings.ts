import { envSettingsOf } from '../../config/read-settings';
import { type SettingsTable } from '../../config/setting-row';

/** The scripts' own settings (builds of the Temporal binaries, `npm run cluster`'s PostgreSQL, screenshots, the host recipe check): one row each, parsed like the service's (config/settings.ts). */
export const SCRIPT_SETTINGS = {
  CLUSTER_POSTGRES_URL: {
    kind: 'string',
    defaultText: 'unset: the launcher runs its own PostgreSQL',
    readBy: 'npm run cluster',
    description: 'an existing PostgreSQL server, `postgres://USER:PASSWORD@HOST:PORT`, for the cluster and the read model',
  },
  PG_BINDIR: {
    kind: 'string',
    defaultText: '`pg_config --bindir`, else the newest /usr/lib/postgresql/N/bin',
    readBy: 'npm run cluster',
    description: 'folder of `initdb` and `postgres` (also for `npm run check:host-recipe`, whose fallback is /usr/lib/postgresql/15/bin)',
  },
  TEMPORAL_CLI: {
    kind: 'string',
    defaultText: 'built once into ~/.cache/intent-service',
    readBy: 'scripts',
    description: 'a `temporal` CLI binary to use instead of building v1.5.1 (scripts/temporal-cli.sh)',
  },
  TEMPORAL_TEST_SERVER: {
    kind: 'string',
    defaultText: 'fetched once from Maven Central into ~/.cache/intent-service',
    readBy: 'scripts',
    description: "Temporal's time-skipping test server to use for test/workflows (scripts/test-server.sh)",
  },
  TEMPORAL_CLI_VERSION: {
    kind: 'string',
    default: 'v1.5.1',
    readBy: 'scripts',
    description: 'the `temporal` CLI version scripts/temporal-cli.sh builds (the tests pin v1.5.1)',
  },
  TEMPORAL_TEST_SERVER_VERSION: {
    kind: 'string',
    default: '1.31.0',
    readBy: 'scripts',
    description: 'the test server version scripts/test-server.sh fetches',
  },
  TEMPORAL_SERVER_VERSION: {
    kind: 'string',
    default: 'v1.29.1',
    readBy: 'scripts',
    description: 'the Temporal server version scripts/temporal-cluster-bin.sh builds for `npm run cluster`',
  },
  TEMPORAL_UI_VERSION: {
    kind: 'string',
    default: 'v2.42.1',
    readBy: 'scripts',
    description: 'the Web UI server version scripts/temporal-cluster-bin.sh builds',
  },
  SCREENSHOT_API: {
    kind: 'string',
    default: 'http://127.0.0.1:3000',
    readBy: 'scripts',
    description: 'the API scripts/screenshot-ui.sh uses',
  },
  SCREENSHOT_UI: {
    kind: 'string',
    default: 'http://127.0.0.1:8233',
    readBy: 'scripts',
    description: 'the Temporal UI scripts/screenshot-ui.sh shoots',
  },
  SCREENSHOT_WAIT_MS: {
    kind: 'integer',
    min: 1,
    default: 30000,
    readBy: 'scripts',
    description: 'how long scripts/screenshot-ui.sh waits for the UI page',
  },
  KEEP_HOST_RECIPE: {
    kind: 'flag',
    readBy: 'scripts',
    description:
      '`1`: `npm run check:host-recipe` keeps its temporary folder (the clone, the settings, every process log) instead of removing it',
  },
} as const satisfies SettingsTable;

/** This process's scripts settings, parsed once. */
export const scriptSettings = () => envSettingsOf(SCRIPT_SETTINGS);
