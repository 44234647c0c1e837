import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv } from 'ajv';
import proxyaddr from 'proxy-addr';
import { ConfigError, SETTINGS, readSettings, type SettingName, type Settings } from './settings';
import { explicitConfirmations, parseConfirmations, type ConfirmationsRule } from './confirmations';
import { parseAssetAmounts, type AssetAmounts } from './refund-limits';
import { tracingConfigOf, type TracingConfig } from './tracing';
import { parseDepositTokens, type DepositToken } from './deposit-tokens';

/** The project's root folder (config paths such as `data/tokens.json` are relative to it). */
export const projectRoot = path.resolve(__dirname, '..', '..');

/** The service's settings, parsed once at start-up and passed down; nothing else reads env. */
export interface Config {
  readonly port: number;
  readonly host: string;
  readonly temporal: {
    /** Unset: `npm start` runs the embedded dev server from temporal-dev.yaml. */
    readonly address?: string;
    readonly namespace: string;
    readonly taskQueue: string;
    /** Temporal Cloud / remote cluster credentials. */
    readonly apiKey?: string;
    readonly tls?: { readonly certPath?: string; readonly keyPath?: string; readonly caPath?: string; readonly serverName?: string };
  };
  /** Unset: `npm start` runs three local storage nodes. */
  readonly storageNodes?: readonly string[];
  /** The keys every request to a storage node is signed with (lib/node-keys-file.ts); absolute. */
  readonly storageNodeKeysFile: string;
  /** PEM CA bundle for `https://` storage nodes; unset: the system roots. */
  readonly storageNodeCaFile?: string;
  readonly request: { readonly maxBatchLen: number; readonly timeoutMs: number; readonly maxTimeoutMs: number };
  readonly allowedDomains: readonly string[];
  readonly envelopeMaxAgeS: number;
  readonly apiTokensFile: string;
  readonly bodyLimitBytes: number;
  readonly executionTtlSeconds: number;
  readonly executionLingerSeconds: number;
  readonly signingDeadlineSeconds: number;
  /** Admission (CAPACITY_OPEN_RUNS, CAPACITY_PER_WALLET): the open runs of the service and a wallet's open executions at most; 0 turns one off. */
  readonly capacity: { readonly openRuns: number; readonly perWallet: number };
  /** Requests per `windowS` per client IP / wallet (routes without a token) / token id; 0 turns one off. */
  readonly rateLimits: {
    readonly windowS: number;
    readonly perIp: number;
    readonly perWallet: number;
    readonly perToken: number;
    readonly authFailuresPerIp: number;
  };
  /**
   * The proxies whose X-Forwarded-For is believed (proxy-addr syntax: IPs, CIDRs, `loopback`,
   * `uniquelocal`); empty: the client IP is the socket's peer and the header is ignored.
   */
  readonly trustProxy: readonly string[];
  /**
   * The read model (db/): PostgreSQL when `url` (DATABASE_URL) is set, else the SQLite file
   * `sqliteFile` (DATABASE_FILE, default data/read-model.sqlite).
   */
  readonly database: { readonly url?: string; readonly sqliteFile: string };
  /** Endpoints that receive every execution status change, signed the Standard Webhooks way. */
  readonly webhooks: readonly WebhookEndpoint[];
  /** Browser origins allowed on the public routes (CORS_ORIGINS); empty: CORS off. */
  readonly corsOrigins: readonly string[];
  /** How often one API process reads an execution that has SSE subscribers (SSE_POLL_MS). */
  readonly ssePollMs: number;
  /** Event stream caps (api/executions/events.ts StreamLimits). */
  readonly sse: {
    readonly maxStreams: number;
    readonly maxPerClient: number;
    readonly maxPerSite: number;
    readonly maxPerNetwork: number;
    readonly maxLifetimeMs: number;
  };
  /** The JSON log's level (LOG_LEVEL). */
  readonly logLevel: string;
  /** The worker's Temporal SDK log level (SDK_LOG_LEVEL). */
  readonly sdkLogLevel: 'TRACE' | 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';
  /** On SIGTERM, how long requests in flight may run on (SHUTDOWN_GRACE_MS). */
  readonly shutdownGraceMs: number;
  /**
   * The address every operator endpoint binds (the API's operator port, the worker's metrics):
   * OPERATOR_HOST, loopback unless an operator exposes them on purpose; never HOST.
   */
  readonly operatorHost: string;
  /** The API's operator endpoints (metrics, detailed readiness); undefined: none (OPERATOR_PORT=off). */
  readonly operator?: { readonly host: string; readonly port: number };
  /** The worker's metrics port; undefined: no metrics endpoint (WORKER_METRICS_PORT=off). */
  readonly workerMetricsPort?: number;
  /** How many workflows the worker keeps cached between tasks (WORKER_CACHED_WORKFLOWS). */
  readonly workerCachedWorkflows: number;
  /**
   * On-chain deposits (decision 0071): the chain's JSON-RPC URL and the watcher's settings;
   * undefined (CHAIN_RPC_URL unset): no watcher, and prepare refuses a `deposit`.
   */
  readonly chain?: {
    readonly rpcUrl: string;
    /** Per chain, with the table of known chains (config/confirmations.ts). */
    readonly confirmations: ConfirmationsRule;
    readonly pollIntervalMs: number;
    readonly maxBlocksPerRound: number;
    readonly windowSize: number;
    readonly roundsPerRun: number;
    /** The ERC-20 tokens deposits may be made in (DEPOSIT_TOKENS), of every chain. */
    readonly tokens: readonly DepositToken[];
  };
  /** Refunds the workers pay on the chain (decision 0081). */
  readonly refunds: {
    /** REFUND_PAYMENTS: whether new refunds are signed. */
    readonly payments: 'on' | 'off';
    /** REFUND_LIMITS and REFUND_MINIMUMS as set, in base units (config/refund-limits.ts adds the defaults). */
    readonly limits: AssetAmounts;
    readonly minimums: AssetAmounts;
    /** REFUND_GAS_KEY_FILE, absolute; undefined: no gas account (token rows are held `no-gas-key`). */
    readonly gasKeyFile?: string;
    readonly minFeeMultiple: number;
    readonly replaceAfterBlocks: number;
  };
  /** The deposit addresses' seed file (DEPOSIT_SEED_FILE); absolute. */
  readonly depositSeedFile: string;
  /** The worker's Worker Deployment (decision 0068); undefined: an unversioned worker (WORKER_VERSIONING=off). */
  readonly workerDeployment?: { readonly name: string; readonly promote: 'current' | 'none' };
  /** Where spans go (the OTEL_* variables); undefined: no tracing. */
  readonly tracing?: TracingConfig;
}

export interface WebhookEndpoint {
  readonly url: string;
  /** `whsec_` + base64 of the HMAC key (the Standard Webhooks secret format). */
  readonly secret: string;
}

export { ConfigError };

/** The file key's schema: the same range as its variable's row in config/settings.ts. */
function integerSchema(name: SettingName): { type: 'integer'; minimum: number; maximum?: number } {
  const row = SETTINGS[name] as { kind: string; min?: number; max?: number };
  if (row.kind !== 'integer' || row.min === undefined) throw new Error(`${name} is not an integer setting`);
  return row.max === undefined ? { type: 'integer', minimum: row.min } : { type: 'integer', minimum: row.min, maximum: row.max };
}

const fileSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    $comment: { type: 'string' },
    port: integerSchema('PORT'),
    host: { type: 'string', minLength: 1 },
    temporal: {
      type: 'object',
      additionalProperties: false,
      properties: {
        address: { type: 'string', minLength: 1 },
        namespace: { type: 'string', minLength: 1 },
        taskQueue: { type: 'string', minLength: 1 },
      },
    },
    storageNodes: { type: 'array', items: { type: 'string', minLength: 1 } },
    storageNodeKeysFile: { type: 'string', minLength: 1 },
    storageNodeCaFile: { type: 'string', minLength: 1 },
    RequestConfig: {
      type: 'object',
      additionalProperties: false,
      properties: {
        MaxBatchLen: integerSchema('WHITELIST_MAX_BATCH_LEN'),
        TimeoutMs: integerSchema('WHITELIST_TIMEOUT_MS'),
        MaxTimeoutMs: integerSchema('WHITELIST_MAX_TIMEOUT_MS'),
      },
    },
    allowedDomains: { type: 'array', items: { type: 'string', minLength: 1 } },
    envelopeMaxAgeS: integerSchema('ENVELOPE_MAX_AGE_S'),
    apiTokensFile: { type: 'string', minLength: 1 },
    bodyLimitBytes: integerSchema('BODY_LIMIT_BYTES'),
    executionTtlSeconds: integerSchema('EXECUTION_TTL_S'),
    executionLingerSeconds: integerSchema('EXECUTION_LINGER_S'),
    signingDeadlineSeconds: integerSchema('SIGNING_DEADLINE_S'),
    capacityOpenRuns: integerSchema('CAPACITY_OPEN_RUNS'),
    capacityPerWallet: integerSchema('CAPACITY_PER_WALLET'),
    rateLimits: {
      type: 'object',
      additionalProperties: false,
      properties: {
        windowS: integerSchema('RATE_LIMIT_WINDOW_S'),
        perIp: integerSchema('RATE_LIMIT_PER_IP'),
        perWallet: integerSchema('RATE_LIMIT_PER_WALLET'),
        perToken: integerSchema('RATE_LIMIT_PER_TOKEN'),
        authFailuresPerIp: integerSchema('RATE_LIMIT_AUTH_FAILURES_PER_IP'),
      },
    },
    trustProxy: { type: 'array', items: { type: 'string', minLength: 1 } },
    database: {
      type: 'object',
      additionalProperties: false,
      properties: { url: { type: 'string', minLength: 1 }, sqliteFile: { type: 'string', minLength: 1 } },
    },
    webhooks: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['url', 'secret'],
        properties: { url: { type: 'string', minLength: 1 }, secret: { type: 'string', minLength: 1 } },
      },
    },
    corsOrigins: { type: 'array', items: { type: 'string', minLength: 1 } },
    ssePollMs: integerSchema('SSE_POLL_MS'),
    sse: {
      type: 'object',
      additionalProperties: false,
      properties: {
        maxStreams: integerSchema('SSE_MAX_STREAMS'),
        maxPerClient: integerSchema('SSE_MAX_STREAMS_PER_CLIENT'),
        maxPerSite: integerSchema('SSE_MAX_STREAMS_PER_SITE'),
        maxPerNetwork: integerSchema('SSE_MAX_STREAMS_PER_NETWORK'),
        maxLifetimeS: integerSchema('SSE_MAX_LIFETIME_S'),
      },
    },
  },
} as const;

const WEBHOOK_SECRET = /^whsec_[A-Za-z0-9+/]{16,}={0,2}$/;

/** WEBHOOK_URLS and WEBHOOK_SECRETS (same order), else the file's `webhooks`. */
function webhookEndpoints(env: Settings, fromFile: WebhookEndpoint[] | undefined): WebhookEndpoint[] {
  const urls = env.WEBHOOK_URLS;
  const secrets = env.WEBHOOK_SECRETS ?? [];
  let endpoints: WebhookEndpoint[];
  if (urls) {
    if (secrets.length !== urls.length)
      throw new ConfigError(`WEBHOOK_SECRETS must list one secret per WEBHOOK_URLS entry (${urls.length}), got ${secrets.length}`);
    endpoints = urls.map((url, i) => ({ url, secret: secrets[i] }));
  } else {
    endpoints = fromFile ?? [];
  }
  for (const e of endpoints) {
    checkUrl('WEBHOOK_URLS', e.url);
    if (!WEBHOOK_SECRET.test(e.secret))
      throw new ConfigError(`the webhook secret of ${e.url} must be whsec_ followed by base64 (at least 16 characters)`);
  }
  if (new Set(endpoints.map((e) => e.url)).size !== endpoints.length) throw new ConfigError('WEBHOOK_URLS lists the same URL twice');
  return endpoints.map((e) => ({ url: e.url, secret: e.secret }));
}

/** CORS_ORIGINS entries are exact origins (scheme://host[:port]), as browsers send them. */
function corsOrigins(list: string[]): string[] {
  for (const origin of list) {
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      throw new ConfigError(`CORS_ORIGINS: ${JSON.stringify(origin)} is not an origin`);
    }
    if (url.origin !== origin) throw new ConfigError(`CORS_ORIGINS: ${JSON.stringify(origin)} is not an origin (expected ${url.origin})`);
  }
  return list;
}

type Env = Readonly<Record<string, string | undefined>>;

function checkUrl(name: string, value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(`${name}: ${JSON.stringify(value)} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(`${name}: ${value} must be http(s)`);
  return value.replace(/\/+$/, '');
}

function checkTrustProxy(list: string[]): string[] {
  try {
    proxyaddr.compile(list);
  } catch (err) {
    throw new ConfigError(`TRUST_PROXY: ${(err as Error).message} (expected IPs, CIDRs, loopback, linklocal or uniquelocal)`);
  }
  return list;
}

/**
 * Reads the config file (`CONFIG_FILE`, default `config/service.json`), applies the env overrides
 * of DESIGN.md, validates everything and returns a frozen Config. Throws ConfigError with a message
 * an operator can act on.
 */
export function loadConfig(env: Env = process.env): Config {
  const e = readSettings(env);
  const file = e.CONFIG_FILE ? path.resolve(e.CONFIG_FILE) : path.join(projectRoot, 'config', 'service.json');
  let parsed: any;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ConfigError(`cannot read config file ${file}: ${(err as Error).message}`);
  }
  const ajv = new Ajv({ allErrors: true, strict: true });
  if (!ajv.validate(fileSchema, parsed)) {
    throw new ConfigError(`config file ${file} is invalid: ${ajv.errorsText(ajv.errors)}`);
  }
  // Each value: the env's, else the file's, else the table's default (config/settings.ts).
  const d = <K extends keyof typeof SETTINGS>(name: K) => (SETTINGS[name] as { default?: unknown }).default as never;
  const rc = parsed.RequestConfig ?? {};
  const maxBatchLen: number = e.WHITELIST_MAX_BATCH_LEN ?? rc.MaxBatchLen ?? d('WHITELIST_MAX_BATCH_LEN');
  const timeoutMs: number = e.WHITELIST_TIMEOUT_MS ?? rc.TimeoutMs ?? d('WHITELIST_TIMEOUT_MS');
  const maxTimeoutMs: number = e.WHITELIST_MAX_TIMEOUT_MS ?? rc.MaxTimeoutMs ?? d('WHITELIST_MAX_TIMEOUT_MS');
  if (timeoutMs > maxTimeoutMs) {
    throw new ConfigError(`WHITELIST_TIMEOUT_MS (${timeoutMs}) must not exceed WHITELIST_MAX_TIMEOUT_MS (${maxTimeoutMs})`);
  }
  const nodes: string[] | undefined = e.STORAGE_NODES ?? parsed.storageNodes;
  const storageNodes = nodes?.map((n: string) => checkUrl('STORAGE_NODES', n));
  if (storageNodes && new Set(storageNodes).size !== storageNodes.length) {
    throw new ConfigError('STORAGE_NODES lists the same node twice');
  }
  const tokensFile: string = e.API_TOKENS_FILE ?? parsed.apiTokensFile ?? d('API_TOKENS_FILE');
  const nodeKeysFile: string = e.STORAGE_NODE_KEYS_FILE ?? parsed.storageNodeKeysFile ?? d('STORAGE_NODE_KEYS_FILE');
  const nodeCaFile: string | undefined = e.STORAGE_NODE_CA_FILE ?? parsed.storageNodeCaFile;
  const tlsCert = e.TEMPORAL_TLS_CERT;
  const tlsKey = e.TEMPORAL_TLS_KEY;
  if (Boolean(tlsCert) !== Boolean(tlsKey)) throw new ConfigError('TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY go together');
  const tlsWanted = tlsCert || e.TEMPORAL_TLS_CA || e.TEMPORAL_TLS || e.TEMPORAL_API_KEY;
  const metricsPort = e.WORKER_METRICS_PORT ?? d('WORKER_METRICS_PORT');
  const operatorPort = e.OPERATOR_PORT ?? d('OPERATOR_PORT');
  const operatorHost: string = e.OPERATOR_HOST ?? d('OPERATOR_HOST');
  const taskQueue: string = e.TEMPORAL_TASK_QUEUE ?? parsed.temporal?.taskQueue ?? d('TEMPORAL_TASK_QUEUE');
  const confirmations = parseConfirmations(e.DEPOSIT_CONFIRMATIONS);
  const windowSize: number = e.CHAIN_REORG_WINDOW ?? d('CHAIN_REORG_WINDOW');
  // The table's numbers are checked when the chain is known (worker/chain-watcher-start.ts).
  for (const n of explicitConfirmations(confirmations))
    if (windowSize <= n) throw new ConfigError(`CHAIN_REORG_WINDOW (${windowSize}) must be more than DEPOSIT_CONFIRMATIONS (${n})`);
  const config: Config = {
    port: e.PORT ?? parsed.port ?? d('PORT'),
    host: e.HOST ?? parsed.host ?? d('HOST'),
    temporal: {
      address: e.TEMPORAL_ADDRESS ?? parsed.temporal?.address,
      namespace: e.TEMPORAL_NAMESPACE ?? parsed.temporal?.namespace ?? d('TEMPORAL_NAMESPACE'),
      taskQueue,
      apiKey: e.TEMPORAL_API_KEY,
      tls: tlsWanted
        ? { certPath: tlsCert, keyPath: tlsKey, caPath: e.TEMPORAL_TLS_CA, serverName: e.TEMPORAL_TLS_SERVER_NAME }
        : undefined,
    },
    storageNodes: storageNodes && storageNodes.length > 0 ? storageNodes : undefined,
    storageNodeKeysFile: path.resolve(projectRoot, nodeKeysFile),
    storageNodeCaFile: nodeCaFile === undefined ? undefined : path.resolve(projectRoot, nodeCaFile),
    request: { maxBatchLen, timeoutMs, maxTimeoutMs },
    allowedDomains: e.ALLOWED_DOMAINS ?? parsed.allowedDomains ?? d('ALLOWED_DOMAINS'),
    envelopeMaxAgeS: e.ENVELOPE_MAX_AGE_S ?? parsed.envelopeMaxAgeS ?? d('ENVELOPE_MAX_AGE_S'),
    apiTokensFile: path.resolve(projectRoot, tokensFile),
    bodyLimitBytes: e.BODY_LIMIT_BYTES ?? parsed.bodyLimitBytes ?? d('BODY_LIMIT_BYTES'),
    executionTtlSeconds: e.EXECUTION_TTL_S ?? parsed.executionTtlSeconds ?? d('EXECUTION_TTL_S'),
    executionLingerSeconds: e.EXECUTION_LINGER_S ?? parsed.executionLingerSeconds ?? d('EXECUTION_LINGER_S'),
    signingDeadlineSeconds: e.SIGNING_DEADLINE_S ?? parsed.signingDeadlineSeconds ?? d('SIGNING_DEADLINE_S'),
    capacity: {
      openRuns: e.CAPACITY_OPEN_RUNS ?? parsed.capacityOpenRuns ?? d('CAPACITY_OPEN_RUNS'),
      perWallet: e.CAPACITY_PER_WALLET ?? parsed.capacityPerWallet ?? d('CAPACITY_PER_WALLET'),
    },
    rateLimits: {
      windowS: e.RATE_LIMIT_WINDOW_S ?? parsed.rateLimits?.windowS ?? d('RATE_LIMIT_WINDOW_S'),
      perIp: e.RATE_LIMIT_PER_IP ?? parsed.rateLimits?.perIp ?? d('RATE_LIMIT_PER_IP'),
      perWallet: e.RATE_LIMIT_PER_WALLET ?? parsed.rateLimits?.perWallet ?? d('RATE_LIMIT_PER_WALLET'),
      perToken: e.RATE_LIMIT_PER_TOKEN ?? parsed.rateLimits?.perToken ?? d('RATE_LIMIT_PER_TOKEN'),
      authFailuresPerIp: e.RATE_LIMIT_AUTH_FAILURES_PER_IP ?? parsed.rateLimits?.authFailuresPerIp ?? d('RATE_LIMIT_AUTH_FAILURES_PER_IP'),
    },
    trustProxy: checkTrustProxy(e.TRUST_PROXY ?? parsed.trustProxy ?? d('TRUST_PROXY')),
    database: {
      url: e.DATABASE_URL ?? parsed.database?.url,
      sqliteFile: path.resolve(projectRoot, e.DATABASE_FILE ?? parsed.database?.sqliteFile ?? d('DATABASE_FILE')),
    },
    webhooks: webhookEndpoints(e, parsed.webhooks),
    corsOrigins: corsOrigins(e.CORS_ORIGINS ?? parsed.corsOrigins ?? d('CORS_ORIGINS')),
    ssePollMs: e.SSE_POLL_MS ?? parsed.ssePollMs ?? d('SSE_POLL_MS'),
    sse: {
      maxStreams: e.SSE_MAX_STREAMS ?? parsed.sse?.maxStreams ?? d('SSE_MAX_STREAMS'),
      maxPerClient: e.SSE_MAX_STREAMS_PER_CLIENT ?? parsed.sse?.maxPerClient ?? d('SSE_MAX_STREAMS_PER_CLIENT'),
      maxPerSite: e.SSE_MAX_STREAMS_PER_SITE ?? parsed.sse?.maxPerSite ?? d('SSE_MAX_STREAMS_PER_SITE'),
      maxPerNetwork: e.SSE_MAX_STREAMS_PER_NETWORK ?? parsed.sse?.maxPerNetwork ?? d('SSE_MAX_STREAMS_PER_NETWORK'),
      maxLifetimeMs: 1000 * (e.SSE_MAX_LIFETIME_S ?? parsed.sse?.maxLifetimeS ?? d('SSE_MAX_LIFETIME_S')),
    },
    logLevel: e.LOG_LEVEL ?? d('LOG_LEVEL'),
    sdkLogLevel: e.SDK_LOG_LEVEL ?? d('SDK_LOG_LEVEL'),
    shutdownGraceMs: e.SHUTDOWN_GRACE_MS ?? d('SHUTDOWN_GRACE_MS'),
    operatorHost,
    operator: operatorPort === 'off' ? undefined : { host: operatorHost, port: operatorPort },
    workerMetricsPort: metricsPort === 'off' ? undefined : metricsPort,
    workerCachedWorkflows: e.WORKER_CACHED_WORKFLOWS ?? d('WORKER_CACHED_WORKFLOWS'),
    chain: e.CHAIN_RPC_URL
      ? {
          rpcUrl: checkUrl('CHAIN_RPC_URL', e.CHAIN_RPC_URL),
          confirmations,
          pollIntervalMs: e.CHAIN_POLL_INTERVAL_MS ?? d('CHAIN_POLL_INTERVAL_MS'),
          maxBlocksPerRound: e.CHAIN_MAX_BLOCKS_PER_ROUND ?? d('CHAIN_MAX_BLOCKS_PER_ROUND'),
          windowSize,
          roundsPerRun: e.CHAIN_ROUNDS_PER_RUN ?? d('CHAIN_ROUNDS_PER_RUN'),
          tokens: parseDepositTokens(e.DEPOSIT_TOKENS),
        }
      : undefined,
    refunds: {
      payments: e.REFUND_PAYMENTS ?? d('REFUND_PAYMENTS'),
      limits: parseAssetAmounts('REFUND_LIMITS', e.REFUND_LIMITS),
      minimums: parseAssetAmounts('REFUND_MINIMUMS', e.REFUND_MINIMUMS),
      ...(e.REFUND_GAS_KEY_FILE ? { gasKeyFile: path.resolve(projectRoot, e.REFUND_GAS_KEY_FILE) } : {}),
      minFeeMultiple: e.REFUND_MIN_FEE_MULTIPLE ?? d('REFUND_MIN_FEE_MULTIPLE'),
      replaceAfterBlocks: e.REFUND_REPLACE_AFTER_BLOCKS ?? d('REFUND_REPLACE_AFTER_BLOCKS'),
    },
    depositSeedFile: path.resolve(projectRoot, e.DEPOSIT_SEED_FILE ?? d('DEPOSIT_SEED_FILE')),
    workerDeployment:
      (e.WORKER_VERSIONING ?? d('WORKER_VERSIONING')) === 'off'
        ? undefined
        : { name: e.WORKER_DEPLOYMENT_NAME ?? d('WORKER_DEPLOYMENT_NAME'), promote: e.WORKER_PROMOTE ?? d('WORKER_PROMOTE') },
    tracing: tracingConfigOf(e),
  };
  return deepFreeze(config);
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
