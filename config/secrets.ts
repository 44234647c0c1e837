import type { Secrets } from '../lib/redact';
import type { TracingConfig } from '../lib/tracing';
import type { WebhookEndpoint } from './combined-settings';

/**
 * The password of a database URL (in its userinfo or, as libpq also reads it, a `password`
 * parameter), as written and decoded; none when it has none or does not parse.
 */
function passwordOf(url: string): string[] {
  try {
    const parsed = new URL(url);
    const given = [parsed.password, parsed.searchParams.get('password') ?? ''].filter((p) => p !== '');
    return [...new Set(given.flatMap((p) => [p, decodeURIComponent(p), encodeURIComponent(p)]))];
  } catch {
    return [];
  }
}

/** The settings that hold a secret, as any process's config has them (each optional: a process holds only its own). */
export interface SecretSettings {
  readonly chain?: { readonly rpcUrl: string };
  readonly webhooks?: readonly WebhookEndpoint[];
  readonly database?: { readonly url?: string };
  readonly temporal?: { readonly apiKey?: string };
  readonly tracing?: TracingConfig;
}

/**
 * What a process must not write down (lib/redact.ts), from its config: the chain node's URL (a
 * hosted node's key is in its path), the webhook receivers' URLs and signing secrets, the read
 * model's password (its user and database name are not secret: a user named like the service,
 * `intent`, would otherwise blank that word out of every line), Temporal's API key, the OTLP
 * collector's header values.
 */
export function secretsOf(config: SecretSettings): Secrets {
  const urls: string[] = [];
  const values: string[] = [];
  if (config.chain) urls.push(config.chain.rpcUrl);
  for (const hook of config.webhooks ?? []) {
    urls.push(hook.url);
    values.push(hook.secret);
  }
  if (config.database?.url) values.push(...passwordOf(config.database.url));
  if (config.temporal?.apiKey) values.push(config.temporal.apiKey);
  // The collector's URL is not secret (the operator reads it in `spans not exported`); its headers carry the key.
  if (config.tracing) values.push(...Object.values(config.tracing.headers));
  return { urls, values };
}
