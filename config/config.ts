import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv } from 'ajv';
import proxyaddr from 'proxy-addr';

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
    /** Temporal Cloud / remote cluster credentials (issue 5). */
    readonly apiKey?: string;
    readonly tls?: { readonly certPath?: string; readonly keyPath?: string; readonly caPath?: string; readonly serverName?: string };
  };
  /** Unset: `npm start` runs three local storage nodes. */
  readonly storageNodes?: readonly string[];
  readonly request: { readonly maxBatchLen: number; readonly timeoutMs: number; readonly maxTimeoutMs: number };
  readonly allowedDomains: readonly string[];
  readonly envelopeMaxAgeS: number;
  readonly apiTokensFile: string;
  readonly bodyLimitBytes: number;
  readonly executionTtlSeconds: number;
  readonly executionLingerSeconds: number;
  /** Requests per `windowS` per client IP / wallet (routes without a token) / token id; 0 turns one off. */
  readonly rateLimits: { readonly windowS: number; readonly perIp: number; readonly perWallet: number; readonly perToken: number };
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
}

export interface WebhookEndpoint {
  readonly url: string;
  /** `whsec_` + base64 of the HMAC key (the Standard Webhooks secret format). */
  readonly secret: string;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

const fileSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    $comment: { type: 'string' },
    port: { type: 'integer', minimum: 0, maximum: 65535 },
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
    RequestConfig: {
      type: 'object',
      additionalProperties: false,
      properties: {
        MaxBatchLen: { type: 'integer', minimum: 1, maximum: 10000 },
        TimeoutMs: { type: 'integer', minimum: 1 },
        MaxTimeoutMs: { type: 'integer', minimum: 1 },
      },
    },
    allowedDomains: { type: 'array', items: { type: 'string', minLength: 1 } },
    envelopeMaxAgeS: { type: 'integer', minimum: 1 },
    apiTokensFile: { type: 'string', minLength: 1 },
    bodyLimitBytes: { type: 'integer', minimum: 1024 },
    executionTtlSeconds: { type: 'integer', minimum: 1 },
    executionLingerSeconds: { type: 'integer', minimum: 0 },
    rateLimits: {
      type: 'object',
      additionalProperties: false,
      properties: {
        windowS: { type: 'integer', minimum: 1 },
        perIp: { type: 'integer', minimum: 0 },
        perWallet: { type: 'integer', minimum: 0 },
        perToken: { type: 'integer', minimum: 0 },
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
    ssePollMs: { type: 'integer', minimum: 50 },
  },
} as const;

const WEBHOOK_SECRET = /^whsec_[A-Za-z0-9+/]{16,}={0,2}$/;

/** WEBHOOK_URLS and WEBHOOK_SECRETS (same order), else the file's `webhooks`. */
function webhookEndpoints(env: Env, fromFile: WebhookEndpoint[] | undefined): WebhookEndpoint[] {
  const urls = envList(env, 'WEBHOOK_URLS');
  const secrets = envList(env, 'WEBHOOK_SECRETS') ?? [];
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

function envInt(env: Env, name: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be an integer, got ${JSON.stringify(raw)}`);
  const value = Number(raw.trim());
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

function envList(env: Env, name: string): string[] | undefined {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return undefined;
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

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
  const file = env.CONFIG_FILE ? path.resolve(env.CONFIG_FILE) : path.join(projectRoot, 'config', 'service.json');
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
  const rc = parsed.RequestConfig ?? {};
  const maxBatchLen = envInt(env, 'WHITELIST_MAX_BATCH_LEN', rc.MaxBatchLen ?? 100, 1, 10000);
  const timeoutMs = envInt(env, 'WHITELIST_TIMEOUT_MS', rc.TimeoutMs ?? 5000, 1);
  const maxTimeoutMs = envInt(env, 'WHITELIST_MAX_TIMEOUT_MS', rc.MaxTimeoutMs ?? 60000, 1);
  if (timeoutMs > maxTimeoutMs) {
    throw new ConfigError(`WHITELIST_TIMEOUT_MS (${timeoutMs}) must not exceed WHITELIST_MAX_TIMEOUT_MS (${maxTimeoutMs})`);
  }
  const nodes = envList(env, 'STORAGE_NODES') ?? parsed.storageNodes;
  const storageNodes = nodes?.map((n: string) => checkUrl('STORAGE_NODES', n));
  if (storageNodes && new Set(storageNodes).size !== storageNodes.length) {
    throw new ConfigError('STORAGE_NODES lists the same node twice');
  }
  const tokensFile = env.API_TOKENS_FILE || parsed.apiTokensFile || 'data/tokens.json';
  const tlsCert = env.TEMPORAL_TLS_CERT || undefined;
  const tlsKey = env.TEMPORAL_TLS_KEY || undefined;
  if (Boolean(tlsCert) !== Boolean(tlsKey)) throw new ConfigError('TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY go together');
  const tlsWanted = tlsCert || env.TEMPORAL_TLS_CA || env.TEMPORAL_TLS === '1' || env.TEMPORAL_API_KEY;
  const config: Config = {
    port: envInt(env, 'PORT', parsed.port ?? 3000, 0, 65535),
    host: env.HOST || parsed.host || '127.0.0.1',
    temporal: {
      address: env.TEMPORAL_ADDRESS || parsed.temporal?.address || undefined,
      namespace: env.TEMPORAL_NAMESPACE || parsed.temporal?.namespace || 'default',
      taskQueue: env.TEMPORAL_TASK_QUEUE || parsed.temporal?.taskQueue || 'intent-service',
      apiKey: env.TEMPORAL_API_KEY || undefined,
      tls: tlsWanted
        ? {
            certPath: tlsCert,
            keyPath: tlsKey,
            caPath: env.TEMPORAL_TLS_CA || undefined,
            serverName: env.TEMPORAL_TLS_SERVER_NAME || undefined,
          }
        : undefined,
    },
    storageNodes: storageNodes && storageNodes.length > 0 ? storageNodes : undefined,
    request: { maxBatchLen, timeoutMs, maxTimeoutMs },
    allowedDomains: envList(env, 'ALLOWED_DOMAINS') ?? parsed.allowedDomains ?? ['localhost'],
    envelopeMaxAgeS: envInt(env, 'ENVELOPE_MAX_AGE_S', parsed.envelopeMaxAgeS ?? 300, 1),
    apiTokensFile: path.resolve(projectRoot, tokensFile),
    bodyLimitBytes: envInt(env, 'BODY_LIMIT_BYTES', parsed.bodyLimitBytes ?? 65536, 1024),
    executionTtlSeconds: envInt(env, 'EXECUTION_TTL_S', parsed.executionTtlSeconds ?? 86400, 1),
    executionLingerSeconds: envInt(env, 'EXECUTION_LINGER_S', parsed.executionLingerSeconds ?? 604800, 0),
    rateLimits: {
      windowS: envInt(env, 'RATE_LIMIT_WINDOW_S', parsed.rateLimits?.windowS ?? 10, 1),
      perIp: envInt(env, 'RATE_LIMIT_PER_IP', parsed.rateLimits?.perIp ?? 200, 0),
      perWallet: envInt(env, 'RATE_LIMIT_PER_WALLET', parsed.rateLimits?.perWallet ?? 100, 0),
      perToken: envInt(env, 'RATE_LIMIT_PER_TOKEN', parsed.rateLimits?.perToken ?? 2000, 0),
    },
    trustProxy: checkTrustProxy(envList(env, 'TRUST_PROXY') ?? parsed.trustProxy ?? []),
    database: {
      url: env.DATABASE_URL || parsed.database?.url || undefined,
      sqliteFile: path.resolve(projectRoot, env.DATABASE_FILE || parsed.database?.sqliteFile || 'data/read-model.sqlite'),
    },
    webhooks: webhookEndpoints(env, parsed.webhooks),
    corsOrigins: corsOrigins(envList(env, 'CORS_ORIGINS') ?? parsed.corsOrigins ?? []),
    ssePollMs: envInt(env, 'SSE_POLL_MS', parsed.ssePollMs ?? 1000, 50),
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
