import { parseDecimalInteger } from '../domain/decimal';

/**
 * Every environment variable the service reads (the API, the worker, the storage node and their
 * launchers): one row each, with its type, default
 * and meaning. `readSettings` parses them all once and fails with a ConfigError naming the variable;
 * entry points pass what they read down, so no other module reads the environment. The table in
 * docs/configuration.md "Settings" is rendered from this one (`npm run docs:settings`) and a unit
 * test fails when they differ.
 */

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Spec =
  | { kind: 'integer'; min: number; max?: number; default?: number }
  /** An integer, or the word `off` for none (parsed as `'off'`). */
  | { kind: 'integer-or-off'; min: number; max: number; default?: number }
  | { kind: 'number'; min: number; default?: number }
  | { kind: 'string'; default?: string }
  /** Comma-separated; blanks dropped. */
  | { kind: 'list'; default?: readonly string[] }
  /** `1` for on; unset or empty for off. */
  | { kind: 'flag' }
  | { kind: 'enum'; values: readonly string[]; caseInsensitive?: boolean; default?: string };

export type Row = Spec & {
  /** The key in config/service.json that the variable overrides, if any. */
  file?: string;
  /** The default as the docs say it, where it is not a plain value. */
  defaultText?: string;
  readBy:
    | 'api'
    | 'worker'
    | 'api, worker'
    | 'api, scripts'
    | 'api, worker, scripts'
    | 'api, worker, storage node'
    | 'npm run cluster'
    | 'tests'
    | 'scripts'
    | 'bench';
  description: string;
};

export const SETTINGS = {
  CONFIG_FILE: {
    kind: 'string',
    defaultText: '`config/service.json`',
    readBy: 'api, worker, scripts',
    description: 'the JSON config file; the variables below override its keys',
  },
  PORT: { kind: 'integer', min: 0, max: 65535, default: 3000, file: 'port', readBy: 'api', description: 'HTTP port (0: any free one)' },
  HOST: {
    kind: 'string',
    default: '127.0.0.1',
    file: 'host',
    readBy: 'api',
    description: "address the API's public port binds (never the operator endpoints: OPERATOR_HOST)",
  },
  TEMPORAL_ADDRESS: {
    kind: 'string',
    file: 'temporal.address',
    defaultText: 'unset: `npm start` runs the embedded dev server; a lone worker uses 127.0.0.1:7233',
    readBy: 'api, worker',
    description: 'Temporal frontend `host:port`',
  },
  TEMPORAL_NAMESPACE: {
    kind: 'string',
    default: 'default',
    file: 'temporal.namespace',
    readBy: 'api, worker',
    description: 'Temporal namespace',
  },
  TEMPORAL_TASK_QUEUE: {
    kind: 'string',
    default: 'intent-service',
    file: 'temporal.taskQueue',
    readBy: 'api, worker',
    description: 'task queue of both workflows',
  },
  TEMPORAL_API_KEY: { kind: 'string', readBy: 'api, worker', description: 'Temporal Cloud API key (turns TLS on)' },
  TEMPORAL_TLS: { kind: 'flag', readBy: 'api, worker', description: '`1`: TLS with the system roots' },
  TEMPORAL_TLS_CERT: { kind: 'string', readBy: 'api, worker', description: 'client certificate file (mTLS; with TEMPORAL_TLS_KEY)' },
  TEMPORAL_TLS_KEY: { kind: 'string', readBy: 'api, worker', description: 'client key file (mTLS; with TEMPORAL_TLS_CERT)' },
  TEMPORAL_TLS_CA: { kind: 'string', readBy: 'api, worker', description: 'CA bundle for the server certificate' },
  TEMPORAL_TLS_SERVER_NAME: {
    kind: 'string',
    readBy: 'api, worker',
    description: 'server name to verify, when it differs from the address',
  },
  STORAGE_NODES: {
    kind: 'list',
    file: 'storageNodes',
    defaultText: 'unset: `npm start` runs three local nodes',
    readBy: 'api, worker',
    description: 'storage node base URLs, comma-separated; every API and worker must list the same set',
  },
  STORAGE_NODE_KEYS_FILE: {
    kind: 'string',
    default: 'data/storage-node-keys',
    file: 'storageNodeKeysFile',
    readBy: 'api, worker, scripts',
    description:
      'the keys every request to a storage node is signed with: one `whsec_…` line each, the first signs, all verify; `npm start` and `npm run cluster` create it (0600) when they run the nodes and it is missing; the nodes get it as `--keys-file`',
  },
  STORAGE_NODE_CA_FILE: {
    kind: 'string',
    file: 'storageNodeCaFile',
    defaultText: 'unset: the system roots',
    readBy: 'api, worker',
    description: 'PEM CA bundle that `https://` storage node certificates are verified against',
  },
  WHITELIST_MAX_BATCH_LEN: {
    kind: 'integer',
    min: 1,
    max: 10000,
    default: 100,
    file: 'RequestConfig.MaxBatchLen',
    readBy: 'api',
    description: 'most changes in one whitelist batch (more: 400)',
  },
  WHITELIST_TIMEOUT_MS: {
    kind: 'integer',
    min: 1,
    default: 5000,
    file: 'RequestConfig.TimeoutMs',
    readBy: 'api',
    description: "a batch's deadline when the request has no `timeout` header",
  },
  WHITELIST_MAX_TIMEOUT_MS: {
    kind: 'integer',
    min: 1,
    default: 60000,
    file: 'RequestConfig.MaxTimeoutMs',
    readBy: 'api',
    description: 'the largest `timeout` header honoured',
  },
  ALLOWED_DOMAINS: {
    kind: 'list',
    default: ['localhost'],
    file: 'allowedDomains',
    readBy: 'api',
    description: '`connectEnvelope.domain` values accepted on submit and cancel',
  },
  ENVELOPE_MAX_AGE_S: {
    kind: 'integer',
    min: 1,
    default: 300,
    file: 'envelopeMaxAgeS',
    readBy: 'api',
    description: 'how far `connectEnvelope.timestamp` may be from now',
  },
  API_TOKENS_FILE: {
    kind: 'string',
    default: 'data/tokens.json',
    file: 'apiTokensFile',
    readBy: 'api, worker, scripts',
    description: 'bearer tokens (hashes and scopes); `npm run token` edits it',
  },
  BODY_LIMIT_BYTES: {
    kind: 'integer',
    min: 1024,
    default: 65536,
    file: 'bodyLimitBytes',
    readBy: 'api',
    description: 'largest request body (more: 413)',
  },
  EXECUTION_TTL_S: {
    kind: 'integer',
    min: 1,
    default: 1800,
    file: 'executionTtlSeconds',
    readBy: 'api',
    description:
      'prepare\'s default `ttlSeconds`: a deposit must come within it (an open execution holds one of CAPACITY_OPEN_RUNS meanwhile: docs/performance.md "Capacity")',
  },
  SIGNING_DEADLINE_S: {
    kind: 'integer',
    min: 1,
    default: 1800,
    file: 'signingDeadlineSeconds',
    readBy: 'api',
    description:
      'how long an execution waits for its signature once its deposit is in (OPERATION_PENDING); then it is EXPIRED and its deposit owed back, so no execution stays open for ever',
  },
  CAPACITY_OPEN_RUNS: {
    kind: 'integer',
    min: 0,
    default: 360,
    file: 'capacityOpenRuns',
    readBy: 'api',
    description:
      "the open workflow runs the service lets its workers hold: open executions (PREPARED, OPERATION_PENDING) and the workers' other running workflows; a prepare beyond it is 503 `CAPACITY_FULL`. Keep it below the smallest worker's WORKER_CACHED_WORKFLOWS (any worker may end up holding every run): a run that must wait for a cache slot is how the Temporal core wedges one (0: off)",
  },
  CAPACITY_PER_WALLET: {
    kind: 'integer',
    min: 0,
    default: 50,
    file: 'capacityPerWallet',
    readBy: 'api',
    description:
      "a wallet's open executions (PREPARED, OPERATION_PENDING) at most; a prepare beyond it is 429 `WALLET_CAPACITY_FULL` (0: off)",
  },
  EXECUTION_LINGER_S: {
    kind: 'integer',
    min: 0,
    default: 0,
    file: 'executionLingerSeconds',
    readBy: 'api',
    description:
      "how long a finished execution's workflow stays open after its final status; 0 closes it at once (retries and late deposits are answered from the read model): a longer one fills the worker's cache",
  },
  RATE_LIMIT_WINDOW_S: {
    kind: 'integer',
    min: 1,
    default: 10,
    file: 'rateLimits.windowS',
    readBy: 'api',
    description: 'the rate-limit window',
  },
  RATE_LIMIT_PER_IP: {
    kind: 'integer',
    min: 0,
    default: 200,
    file: 'rateLimits.perIp',
    readBy: 'api',
    description: 'requests per window per client (IPv4 address, IPv6 /64) on the routes without a token (0: off)',
  },
  RATE_LIMIT_PER_WALLET: {
    kind: 'integer',
    min: 0,
    default: 100,
    file: 'rateLimits.perWallet',
    readBy: 'api',
    description: 'signed actions (submit, cancel) per window per `{wallet}`, counted once the signature verified (0: off)',
  },
  RATE_LIMIT_PER_TOKEN: {
    kind: 'integer',
    min: 0,
    default: 2000,
    file: 'rateLimits.perToken',
    readBy: 'api',
    description: 'requests per window per token id on the routes with a token (0: off)',
  },
  RATE_LIMIT_AUTH_FAILURES_PER_IP: {
    kind: 'integer',
    min: 0,
    default: 20,
    file: 'rateLimits.authFailuresPerIp',
    readBy: 'api',
    description: 'failed authentications (401, a signature that does not verify) per window per client before it gets 429 (0: off)',
  },
  TRUST_PROXY: {
    kind: 'list',
    default: [],
    file: 'trustProxy',
    readBy: 'api',
    description:
      "proxies whose `X-Forwarded-For` is believed and whose requests' `traceparent` is continued (IPs, CIDRs, `loopback`, `uniquelocal`); none: the socket peer is the client, and a caller's trace is only linked",
  },
  DATABASE_URL: {
    kind: 'string',
    file: 'database.url',
    defaultText: 'unset: SQLite',
    readBy: 'api, worker, scripts',
    description: 'PostgreSQL of the read model, `postgres://user:pass@host:5432/db`',
  },
  DATABASE_FILE: {
    kind: 'string',
    default: 'data/read-model.sqlite',
    file: 'database.sqliteFile',
    readBy: 'api, worker, scripts',
    description: 'the SQLite read model (WAL; the API and worker of one machine share it)',
  },
  CHAIN_RPC_URL: {
    kind: 'string',
    defaultText: 'unset: `npm start` runs a local anvil chain on 127.0.0.1:8545; a lone worker or API has no on-chain deposits',
    readBy: 'api, worker, scripts',
    description:
      "JSON-RPC URL of the EVM chain whose native transfers complete deposits; the worker runs its watcher (`chain-watcher:evm:<chainId>`), the API accepts prepare's `deposit` for that chain",
  },
  DEPOSIT_CONFIRMATIONS: {
    kind: 'string',
    defaultText:
      'per chain: `evm:1` 64, `evm:11155111` and `evm:17000` 12, `evm:31337` and `evm:1337` 2; any other chain: none (its watcher does not start)',
    readBy: 'api, worker',
    description:
      "blocks a deposit's block needs, counting itself, before the watcher signals `depositCompleted`: one number (1–1000) for the chain of CHAIN_RPC_URL, or `evm:<chainId>=N` pairs, comma-separated; a chain neither names takes the default column (read every round: a change applies without restarting the watcher); the API refuses a prepare's `deposit` on a chain without a number and proves reported deposits at the same depth, so set it on APIs and workers alike",
  },
  DEPOSIT_TOKENS: {
    kind: 'string',
    defaultText: 'unset: native deposits only (`npm start` and `npm run cluster` allow the tUSD they deploy)',
    readBy: 'api, worker',
    description:
      'ERC-20 tokens prepare accepts as `deposit.asset` `erc20:<address>` and the watcher reads `Transfer` logs of: `evm:<chainId>:<address>=<SYMBOL>:<decimals>`, comma-separated; a token that does not emit the standard `Transfer` event for every balance change must not be listed',
  },
  CHAIN_POLL_INTERVAL_MS: {
    kind: 'integer',
    min: 50,
    default: 1000,
    readBy: 'worker',
    description:
      'how long a caught-up chain watcher waits for the next block in one round: its activity asks the node for the head every 100 ms (beyond 5 s, the workflow sleeps the rest on a timer)',
  },
  CHAIN_MAX_BLOCKS_PER_ROUND: {
    kind: 'integer',
    min: 1,
    max: 1000,
    default: 100,
    readBy: 'worker',
    description: 'most blocks one round of the chain watcher reads (one activity)',
  },
  CHAIN_REORG_WINDOW: {
    kind: 'integer',
    min: 2,
    max: 10000,
    default: 128,
    readBy: 'worker',
    description:
      'recent blocks the watcher keeps to detect a reorg (more than DEPOSIT_CONFIRMATIONS); a signalled deposit is checked for a deep reorg while its block is within it',
  },
  CHAIN_ROUNDS_PER_RUN: {
    kind: 'integer',
    min: 10,
    max: 100000,
    default: 500,
    readBy: 'worker',
    description:
      'rounds of the chain watcher per workflow run before it continues as new with its state (bounds its history; it also does when Temporal suggests it)',
  },
  DEPOSIT_SEED_FILE: {
    kind: 'string',
    default: 'data/deposit-seed',
    readBy: 'api, worker, scripts',
    description:
      'the 32-byte secret every deposit address and its private key are derived from: the API creates it (0600) on first use and derives addresses from it, the workers read it (never create it) to sign refunds, `npm run seed` backs it up and verifies a backup; every API and worker of a deployment must read the same one, and losing it loses the keys of the deposit addresses (docs/backup.md "The deposit seed: custody, backup and restore")',
  },
  REFUND_PAYMENTS: {
    kind: 'enum',
    values: ['on', 'off'],
    default: 'on',
    readBy: 'worker',
    description:
      'whether the workers pay refunds ledger rows back on the chain by themselves (`refund:<chain>:<address>` workflows); `off`: no new refund is signed, one already signed is still watched until its nonce is mined',
  },
  REFUND_LIMITS: {
    kind: 'string',
    defaultText:
      '`evm:31337` and `evm:1337`: 1 ETH and 1,000 tUSD (`evm:31337:tUSD=1000000000`); any other asset: none (every row is held `above-limit`)',
    readBy: 'worker',
    description:
      'the most a refunds ledger row is paid back without a person, in base units, per asset: `evm:<chainId>=<wei>` for the native coin, `evm:<chainId>:<token address or DEPOSIT_TOKENS symbol>=<amount>` for a token, comma-separated; a row above it is held `above-limit` until approved',
  },
  REFUND_MINIMUMS: {
    kind: 'string',
    defaultText: '`evm:31337` and `evm:1337`: 0.01 tUSD (`evm:31337:tUSD=10000`); any other asset: none',
    readBy: 'worker',
    description:
      'the least a refunds ledger row is paid back by the service, in base units, per asset (written like REFUND_LIMITS); a row below it is held `too-small`',
  },
  REFUND_GAS_KEY_FILE: {
    kind: 'string',
    defaultText: "unset (`npm start` on its own anvil: anvil's second dev account, written to `data/gas-account.key`)",
    readBy: 'worker',
    description:
      "the gas account's private key (a file holding `0x` + 64 hex digits, mode 0600): it pays the fee of every token refund by topping the deposit address up first; a worker without one holds token rows `no-gas-key`. A secret like the deposit seed: back it up",
  },
  REFUND_MIN_FEE_MULTIPLE: {
    kind: 'integer',
    min: 1,
    max: 1000,
    default: 10,
    readBy: 'worker',
    description: "a row below this many times its refund's most cost (gas × fee cap) is held `too-small`",
  },
  REFUND_REPLACE_AFTER_BLOCKS: {
    kind: 'integer',
    min: 1,
    max: 10000,
    default: 10,
    readBy: 'worker',
    description:
      'blocks a refund transaction may wait unmined before it is replaced at the same nonce with fees raised by 12.5 % (up to half the row amount, then the row is held `fee-cap`)',
  },
  WEBHOOK_URLS: {
    kind: 'list',
    default: [],
    file: 'webhooks[].url',
    readBy: 'api, worker',
    description:
      'endpoints that receive every execution status change: the API records at prepare whether an execution sends webhooks at all, the workers deliver them, so set it (and WEBHOOK_SECRETS) on both',
  },
  WEBHOOK_SECRETS: {
    kind: 'list',
    default: [],
    file: 'webhooks[].secret',
    readBy: 'api, worker',
    description: '`whsec_…` secrets, one per WEBHOOK_URLS entry, same order',
  },
  CORS_ORIGINS: {
    kind: 'list',
    default: [],
    file: 'corsOrigins',
    readBy: 'api',
    description: 'exact browser origins allowed on the public routes; none: CORS off',
  },
  SSE_POLL_MS: {
    kind: 'integer',
    min: 50,
    default: 1000,
    file: 'ssePollMs',
    readBy: 'api',
    description: 'how often one API process reads the watched executions (all in one read-model query)',
  },
  SSE_MAX_STREAMS: {
    kind: 'integer',
    min: 1,
    default: 5000,
    file: 'sse.maxStreams',
    readBy: 'api',
    description: 'open event streams one API process serves at most (beyond: 503 with Retry-After)',
  },
  SSE_MAX_STREAMS_PER_CLIENT: {
    kind: 'integer',
    min: 1,
    default: 20,
    file: 'sse.maxPerClient',
    readBy: 'api',
    description: 'open event streams one client (IPv4 address, IPv6 /64) may hold on one API process (beyond: 429)',
  },
  SSE_MAX_STREAMS_PER_SITE: {
    kind: 'integer',
    min: 1,
    default: 80,
    file: 'sse.maxPerSite',
    readBy: 'api',
    description:
      "open event streams the clients of one IPv6 /56 (a subscriber's allocation) may hold together on one API process (beyond: 429)",
  },
  SSE_MAX_STREAMS_PER_NETWORK: {
    kind: 'integer',
    min: 1,
    default: 250,
    file: 'sse.maxPerNetwork',
    readBy: 'api',
    description:
      'open event streams the clients of one IPv4 /24 or IPv6 /48 may hold together on one API process (beyond: 429), so that one allocation cannot take SSE_MAX_STREAMS',
  },
  SSE_MAX_LIFETIME_S: {
    kind: 'integer',
    min: 1,
    default: 300,
    file: 'sse.maxLifetimeS',
    readBy: 'api',
    description: 'an event stream ends after this long; EventSource reconnects with Last-Event-ID',
  },
  SHUTDOWN_GRACE_MS: {
    kind: 'integer',
    min: 0,
    default: 10000,
    readBy: 'api',
    description: 'on SIGTERM, how long requests in flight may take before the API exits',
  },
  OPERATOR_PORT: {
    kind: 'integer-or-off',
    min: 0,
    max: 65535,
    default: 9470,
    readBy: 'api',
    description:
      'port of the API operator endpoints `/metrics` and the detailed `/readyz` (0: any free one; `off`: none); never the public port',
  },
  OPERATOR_HOST: {
    kind: 'string',
    default: '127.0.0.1',
    readBy: 'api, worker',
    description:
      'address every operator endpoint binds: the API operator port and the worker `/metrics`; loopback unless set, whatever HOST says (set it to a private address a scraper reaches, never the public network)',
  },
  WORKER_DEPLOYMENT_NAME: {
    kind: 'string',
    default: 'intent-service',
    readBy: 'worker',
    description:
      "the Temporal Worker Deployment the worker's version belongs to; the version's build id is `<package version>-<first 12 hex digits of the workflow bundle's SHA-256>` (decision 0068)",
  },
  WORKER_VERSIONING: {
    kind: 'enum',
    values: ['on', 'off'],
    caseInsensitive: true,
    default: 'on',
    readBy: 'worker',
    description:
      '`on`: the worker polls as a version of WORKER_DEPLOYMENT_NAME and every workflow stays on the version that started it (pinned); `off`: an unversioned worker, for a Temporal server without Worker Deployments',
  },
  WORKER_PROMOTE: {
    kind: 'enum',
    values: ['current', 'none'],
    caseInsensitive: true,
    default: 'current',
    readBy: 'worker',
    description:
      '`current`: once it polls, the worker makes its version the current one of its deployment (new workflows start on it, running ones stay where they are); `none`: an operator does, with `temporal worker deployment set-current-version`',
  },
  WORKER_METRICS_PORT: {
    kind: 'integer-or-off',
    min: 0,
    max: 65535,
    default: 9464,
    readBy: 'worker',
    description: 'port of the worker `/metrics`, on OPERATOR_HOST (0: any free one; `off`: none)',
  },
  WORKER_CACHED_WORKFLOWS: {
    kind: 'integer',
    min: 0,
    default: 400,
    readBy: 'worker',
    description:
      "the worker's sticky cache (`maxCachedWorkflows`): how many workflows it keeps in memory between tasks (0: none, every task replays its history)",
  },
  OTEL_SDK_DISABLED: {
    kind: 'enum',
    values: ['true', 'false'],
    caseInsensitive: true,
    default: 'false',
    readBy: 'api, worker, storage node',
    description: '`true`: no tracing, whatever the endpoints say',
  },
  OTEL_EXPORTER_OTLP_ENDPOINT: {
    kind: 'string',
    defaultText: 'unset: no tracing (no tracer is registered, nothing is exported)',
    readBy: 'api, worker, storage node',
    description:
      'base URL of an OTLP/HTTP collector, e.g. `http://127.0.0.1:4318`: set, each process exports its spans to `<url>/v1/traces` (docs/operations.md "Tracing")',
  },
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: {
    kind: 'string',
    defaultText: 'unset: `<OTEL_EXPORTER_OTLP_ENDPOINT>/v1/traces`',
    readBy: 'api, worker, storage node',
    description: 'the full URL spans are sent to, used as it is; set alone, it turns tracing on too',
  },
  OTEL_EXPORTER_OTLP_PROTOCOL: {
    kind: 'enum',
    values: ['http/protobuf', 'http/json'],
    default: 'http/protobuf',
    readBy: 'api, worker, storage node',
    description: 'the OTLP encoding of the exported spans',
  },
  OTEL_EXPORTER_OTLP_HEADERS: {
    kind: 'string',
    readBy: 'api, worker, storage node',
    description: "headers sent with every export, `key=value` pairs, comma-separated, values URL-encoded (a collector's credentials)",
  },
  OTEL_SERVICE_NAME: {
    kind: 'string',
    defaultText: '`intent-service-api`, `intent-service-worker`, `intent-service-storage-node`',
    readBy: 'api, worker, storage node',
    description: 'the `service.name` of the spans; every process also sets `service.instance.id`',
  },
  OTEL_RESOURCE_ATTRIBUTES: {
    kind: 'string',
    readBy: 'api, worker, storage node',
    description:
      'more resource attributes, `key=value` pairs, comma-separated, values URL-encoded (e.g. `deployment.environment.name=prod`); OTEL_SERVICE_NAME wins over a `service.name` here',
  },
  OTEL_TRACES_SAMPLER: {
    kind: 'enum',
    values: ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'],
    default: 'parentbased_always_on',
    readBy: 'api, worker, storage node',
    description: "which traces are recorded: the `parentbased_` ones follow the caller's `traceparent` decision",
  },
  OTEL_TRACES_SAMPLER_ARG: {
    kind: 'number',
    min: 0,
    defaultText: '`1`',
    readBy: 'api, worker, storage node',
    description: 'the ratio (0–1) of the `traceidratio` samplers',
  },
  OTEL_BSP_SCHEDULE_DELAY: {
    kind: 'integer',
    min: 1,
    default: 5000,
    readBy: 'api, worker, storage node',
    description: 'ms between two exports of the finished spans (a process also exports what is left when it stops)',
  },
  LOG_LEVEL: {
    kind: 'enum',
    values: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
    default: 'info',
    readBy: 'api, worker',
    description: 'level of the JSON log lines (start and stop lines are always written)',
  },
  SDK_LOG_LEVEL: {
    kind: 'enum',
    values: ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR'],
    caseInsensitive: true,
    default: 'WARN',
    readBy: 'worker',
    description: "level of the Temporal SDK's own log lines",
  },
} as const satisfies Record<string, Row>;

export type SettingName = keyof typeof SETTINGS;

/** A table of settings: the service's (above), or a tool's own (scripts/lib/settings.ts, test/support/settings.ts, bench/settings.ts). */
export type SettingsTable = Record<string, Row>;

type ValueOf<S> = S extends { kind: 'integer' | 'number' }
  ? number
  : S extends { kind: 'integer-or-off' }
    ? number | 'off'
    : S extends { kind: 'list' }
      ? string[]
      : S extends { kind: 'flag' }
        ? boolean
        : S extends { kind: 'enum'; values: readonly (infer V)[] }
          ? V
          : string;

/** What the environment sets of a table's variables, parsed; a variable that is unset (or empty) is absent. */
export type SettingsOf<T extends SettingsTable> = { readonly [K in keyof T]?: ValueOf<T[K]> };

/** The service's settings as the environment sets them. */
export type Settings = SettingsOf<typeof SETTINGS>;

type Env = Readonly<Record<string, string | undefined>>;

function parseOne(name: string, spec: Spec, raw: string): unknown {
  const bad = (expected: string) => new ConfigError(`${name} must be ${expected}, got ${JSON.stringify(raw)}`);
  const value = raw.trim();
  switch (spec.kind) {
    case 'integer':
    case 'integer-or-off': {
      if (spec.kind === 'integer-or-off' && value === 'off') return 'off';
      const n = parseDecimalInteger(value);
      const max = spec.max ?? Number.MAX_SAFE_INTEGER;
      const range = `an integer of ${spec.min}..${max}${spec.kind === 'integer-or-off' ? ' or "off"' : ''}`;
      if (n === undefined || n < spec.min || n > max) throw bad(range);
      return n;
    }
    case 'number': {
      const n = Number(value);
      if (!/^\d+(\.\d+)?$/.test(value) || n < spec.min) throw bad(`a number of at least ${spec.min}`);
      return n;
    }
    case 'string':
      return value;
    case 'list':
      return value
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s.length > 0);
    case 'flag':
      if (value !== '1' && value !== '0') throw bad('1 (on) or 0 (off)');
      return value === '1';
    case 'enum': {
      const found = spec.values.find((v) => (spec.caseInsensitive ? v.toLowerCase() === value.toLowerCase() : v === value));
      if (found === undefined) throw bad(`one of ${spec.values.join(', ')}`);
      return found;
    }
  }
}

/** Parses every variable of `table` that `env` sets; a ConfigError names the first bad one. */
export function readSettingsOf<T extends SettingsTable>(table: T, env: Env): SettingsOf<T> {
  const out: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(table) as [string, Spec][]) {
    const raw = env[name];
    if (raw === undefined || raw.trim() === '') continue;
    out[name] = parseOne(name, spec, raw);
  }
  return Object.freeze(out) as SettingsOf<T>;
}

/** The service's settings that `env` sets. */
export const readSettings = (env: Env): Settings => readSettingsOf(SETTINGS, env);

const processSettings = new Map<SettingsTable, unknown>();

/**
 * This process's environment, parsed once per table (on first use): the entry points read the
 * service's table here, and the scripts, tests and bench their own.
 */
export function envSettingsOf<T extends SettingsTable>(table: T): SettingsOf<T> {
  if (!processSettings.has(table)) processSettings.set(table, readSettingsOf(table, process.env));
  return processSettings.get(table) as SettingsOf<T>;
}

/** This process's service settings (the launchers'; the service's own Config comes from loadConfig, which uses the same table). */
export const envSettings = (): Settings => envSettingsOf(SETTINGS);

/** The variable's value as `env` sets it, else the table's default (undefined when it has none). */
export function settingOf<K extends SettingName>(env: Env, name: K): ValueOf<(typeof SETTINGS)[K]> | undefined {
  const spec = SETTINGS[name] as Spec;
  const raw = env[name];
  if (raw !== undefined && raw.trim() !== '') return parseOne(name, spec, raw) as ValueOf<(typeof SETTINGS)[K]>;
  return ('default' in spec ? spec.default : undefined) as ValueOf<(typeof SETTINGS)[K]> | undefined;
}

function typeText(spec: Spec): string {
  switch (spec.kind) {
    case 'integer':
      return spec.max === undefined ? `integer ≥ ${spec.min}` : `integer ${spec.min}–${spec.max}`;
    case 'integer-or-off':
      return `integer ${spec.min}–${spec.max} or \`off\``;
    case 'number':
      return `number ≥ ${spec.min}`;
    case 'string':
      return 'string';
    case 'list':
      return 'comma-separated list';
    case 'flag':
      return '`1` / `0`';
    case 'enum':
      return spec.values.map((v) => `\`${v}\``).join(', ');
  }
}

function defaultText(row: Row): string {
  if (row.defaultText) return row.defaultText;
  if (!('default' in row) || row.default === undefined) return 'unset';
  if (Array.isArray(row.default)) return row.default.length === 0 ? 'none' : row.default.map((v) => `\`${v}\``).join(', ');
  return `\`${String(row.default)}\``;
}

const cell = (s: string) => s.replace(/\|/g, '\\|');

/** The Markdown table of docs/configuration.md "Settings": the service's settings. */
export function renderSettingsTable(): string {
  const lines = ['| variable | `config/service.json` key | type | default | read by | what |', '|---|---|---|---|---|---|'];
  for (const [name, row] of Object.entries(SETTINGS) as [string, Row][]) {
    lines.push(
      `| \`${name}\` | ${row.file ? `\`${row.file}\`` : ''} | ${cell(typeText(row))} | ${cell(defaultText(row))} | ${row.readBy} | ${cell(row.description)} |`,
    );
  }
  return lines.join('\n') + '\n';
}

/** The Markdown table of the tools' settings (docs/development.md), from their tables. */
export function renderToolSettingsTable(tables: readonly SettingsTable[]): string {
  const lines = ['| variable | type | default | read by | what |', '|---|---|---|---|---|'];
  for (const table of tables)
    for (const [name, row] of Object.entries(table))
      lines.push(`| \`${name}\` | ${cell(typeText(row))} | ${cell(defaultText(row))} | ${row.readBy} | ${cell(row.description)} |`);
  return lines.join('\n') + '\n';
}

/**
 * The environment of a child process this one starts: `defaults`, then what this process inherited,
 * then `overrides` (an undefined override removes the variable). Children read their settings as above.
 */
export function childEnv(overrides: Record<string, string | undefined> = {}, defaults: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...defaults, ...process.env, ...overrides };
  for (const [k, v] of Object.entries(overrides)) if (v === undefined) delete env[k];
  return env;
}
