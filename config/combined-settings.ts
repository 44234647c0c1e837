import { ConfigError } from './config-error';
import type { CombinedField } from './derive-config';
import { explicitConfirmations, parseConfirmations } from './confirmations';
import { parseDepositTokens, tokenAsset } from './deposit-tokens';
import { amountFor, DEFAULT_REFUND_LIMITS, DEFAULT_REFUND_MINIMUMS, parseAssetAmounts } from './refund-limits';
import { httpUrl } from './setting-converters';
import type { ResolvedSettings, Settings } from './settings';
import { tracingConfigOf } from './tracing';

/**
 * The `Config` fields that several settings make together, and the rules between settings: each a
 * named function of the settings (their rows in config/settings.ts have no `config` field of
 * their own). config/config.ts derives the `Config` type from these functions' results.
 */

/** What a function of several settings is given. */
export interface SettingsContext {
  /** Each setting: the environment's, else the config file's, else the default. */
  readonly value: ResolvedSettings;
  /** What the environment sets, alone. */
  readonly env: Settings;
  /** The config file as read (validated against its schema). */
  readonly file: { readonly webhooks?: readonly WebhookEndpoint[] };
}

export interface WebhookEndpoint {
  readonly url: string;
  /** `whsec_` + base64 of the HMAC key (the Standard Webhooks secret format). */
  readonly secret: string;
}

/** TLS to Temporal: any of TEMPORAL_TLS, a certificate, a CA or an API key turns it on. */
function temporalTls({
  env,
}: SettingsContext):
  { readonly certPath?: string; readonly keyPath?: string; readonly caPath?: string; readonly serverName?: string } | undefined {
  const certPath = env.TEMPORAL_TLS_CERT;
  const keyPath = env.TEMPORAL_TLS_KEY;
  if (Boolean(certPath) !== Boolean(keyPath)) throw new ConfigError('TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY go together');
  const wanted = certPath || env.TEMPORAL_TLS_CA || env.TEMPORAL_TLS || env.TEMPORAL_API_KEY;
  return wanted ? { certPath, keyPath, caPath: env.TEMPORAL_TLS_CA, serverName: env.TEMPORAL_TLS_SERVER_NAME } : undefined;
}

/** The API's operator endpoints (metrics, detailed readiness); undefined: none (OPERATOR_PORT=off). */
function operatorEndpoint({ value }: SettingsContext): { readonly host: string; readonly port: number } | undefined {
  return value.OPERATOR_PORT === 'off' ? undefined : { host: value.OPERATOR_HOST, port: value.OPERATOR_PORT };
}

const WEBHOOK_SECRET = /^whsec_[A-Za-z0-9+/]{16,}={0,2}$/;

/** WEBHOOK_URLS and WEBHOOK_SECRETS (same order), else the file's `webhooks`. */
function webhookEndpoints({ env, file }: SettingsContext): readonly WebhookEndpoint[] {
  const urls = env.WEBHOOK_URLS;
  const secrets = env.WEBHOOK_SECRETS ?? [];
  let endpoints: readonly WebhookEndpoint[];
  if (urls) {
    if (secrets.length !== urls.length)
      throw new ConfigError(`WEBHOOK_SECRETS must list one secret per WEBHOOK_URLS entry (${urls.length}), got ${secrets.length}`);
    endpoints = urls.map((url, i) => ({ url, secret: secrets[i] }));
  } else {
    endpoints = file.webhooks ?? [];
  }
  for (const e of endpoints) {
    httpUrl('WEBHOOK_URLS', e.url);
    if (!WEBHOOK_SECRET.test(e.secret))
      throw new ConfigError(`the webhook secret of ${e.url} must be whsec_ followed by base64 (at least 16 characters)`);
  }
  if (new Set(endpoints.map((e) => e.url)).size !== endpoints.length) throw new ConfigError('WEBHOOK_URLS lists the same URL twice');
  return endpoints.map((e) => ({ url: e.url, secret: e.secret }));
}

/** Config fields made of several settings, by their `Config` path, and the processes that read each. */
export const COMBINED_FIELDS = {
  'temporal.tls': { readBy: 'api, worker', make: temporalTls },
  operator: { readBy: 'api', make: operatorEndpoint },
  webhooks: { readBy: 'api, worker', make: webhookEndpoints },
  /** Where spans go (the OTEL_* variables); undefined: no tracing. */
  tracing: { readBy: 'api, worker', make: ({ env }: SettingsContext) => tracingConfigOf(env) },
  /** The open runs the worker takes (WORKER_OPEN_RUNS): nine tenths of its cache unless set; 0 with no cache. */
  workerOpenRuns: {
    readBy: 'worker',
    make: ({ value }: SettingsContext) => value.WORKER_OPEN_RUNS ?? Math.floor((value.WORKER_CACHED_WORKFLOWS * 9) / 10),
  },
} as const satisfies Record<string, CombinedField>;

/**
 * Config objects that exist only when a setting turns them on; undefined otherwise, and then
 * the settings that fill them are not read (a bad DEPOSIT_TOKENS does not matter without a chain).
 */
export const SWITCHED_FIELDS = {
  /** On-chain deposits: CHAIN_RPC_URL unset means no watcher, and prepare refuses a `deposit`. */
  chain: ({ value }: SettingsContext) => value.CHAIN_RPC_URL !== undefined,
  /** The worker's Worker Deployment; WORKER_VERSIONING=off: an unversioned worker. */
  workerDeployment: ({ value }: SettingsContext) => value.WORKER_VERSIONING !== 'off',
};

/** Rules between settings, checked before the Config is made. */
export const SETTING_RULES: ReadonlyArray<(context: SettingsContext) => void> = [
  function openRunsBelowTheCache({ value }) {
    const openRuns = value.WORKER_OPEN_RUNS;
    if (openRuns !== undefined && openRuns > 0 && value.WORKER_CACHED_WORKFLOWS > 0 && openRuns >= value.WORKER_CACHED_WORKFLOWS)
      throw new ConfigError(
        `WORKER_OPEN_RUNS (${openRuns}) must stay below WORKER_CACHED_WORKFLOWS (${value.WORKER_CACHED_WORKFLOWS}): a run that waits for room in the cache is how the Temporal core wedges one`,
      );
  },
  function timeoutWithinMaximum({ value }) {
    if (value.WHITELIST_TIMEOUT_MS > value.WHITELIST_MAX_TIMEOUT_MS)
      throw new ConfigError(
        `WHITELIST_TIMEOUT_MS (${value.WHITELIST_TIMEOUT_MS}) must not exceed WHITELIST_MAX_TIMEOUT_MS (${value.WHITELIST_MAX_TIMEOUT_MS})`,
      );
  },
  // Checked whether or not the chain is on; the table's numbers are checked when the chain is known (worker/chain-watcher-start.ts).
  function reorgWindowAboveConfirmations({ value }) {
    for (const n of explicitConfirmations(parseConfirmations(value.DEPOSIT_CONFIRMATIONS)))
      if (value.CHAIN_REORG_WINDOW <= n)
        throw new ConfigError(`CHAIN_REORG_WINDOW (${value.CHAIN_REORG_WINDOW}) must be more than DEPOSIT_CONFIRMATIONS (${n})`);
  },
  // A token refund's fee is the gas account's (a top-up and a transfer), whatever the amount: a
  // token the service pays back by itself without a minimum lets anyone drain the gas account with
  // one-unit transfers. Native rows have REFUND_MIN_FEE_MULTIPLE; tokens have no price to compare.
  function tokenRefundsHaveMinimums({ value }) {
    const limits = parseAssetAmounts('REFUND_LIMITS', value.REFUND_LIMITS);
    const minimums = parseAssetAmounts('REFUND_MINIMUMS', value.REFUND_MINIMUMS);
    const tokens = parseDepositTokens(value.DEPOSIT_TOKENS);
    for (const t of tokens) {
      const asset = tokenAsset(t.address);
      if (amountFor(limits, DEFAULT_REFUND_LIMITS, tokens, t.chain, asset) === undefined) continue;
      if (amountFor(minimums, DEFAULT_REFUND_MINIMUMS, tokens, t.chain, asset) !== undefined) continue;
      throw new ConfigError(
        `REFUND_LIMITS lets the service pay back ${t.chain}:${t.symbol} by itself, but REFUND_MINIMUMS sets no minimum for it: every token refund costs the gas account a top-up and a transfer's fee, so set the least worth that (e.g. REFUND_MINIMUMS=${t.chain}:${t.symbol}=<base units>)`,
      );
    }
  },
];
