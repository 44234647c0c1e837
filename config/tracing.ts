import type { TracingConfig } from '../lib/tracing';
import { ConfigError } from './config-error';
import type { Settings } from './settings';

export type { TracingConfig };

/**
 * `key=value` pairs, comma-separated, values percent-encoded (the W3C Baggage form the OTel
 * specification uses for OTEL_RESOURCE_ATTRIBUTES and OTEL_EXPORTER_OTLP_HEADERS).
 */
function keyValues(name: string, raw: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (raw === undefined) return out;
  for (const pair of raw.split(',')) {
    if (pair.trim() === '') continue;
    const at = pair.indexOf('=');
    const key = at > 0 ? pair.slice(0, at).trim() : '';
    if (key === '') throw new ConfigError(`${name} must be key=value pairs, comma-separated; got ${JSON.stringify(pair.trim())}`);
    try {
      out[key] = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      throw new ConfigError(`${name}: the value of ${key} is not URL-encoded text`);
    }
  }
  return out;
}

function checkedUrl(name: string, raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`${name} must be an http(s) URL, got ${JSON.stringify(raw)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ConfigError(`${name} must be an http(s) URL, got ${JSON.stringify(raw)}`);
  return raw;
}

/** The tracing settings `settings` sets; undefined when neither endpoint variable is set or OTEL_SDK_DISABLED is `true` (tracing off). */
export function tracingConfigOf(settings: Settings): TracingConfig | undefined {
  if (settings.OTEL_SDK_DISABLED === 'true') return undefined;
  const traces = settings.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  const base = settings.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (traces === undefined && base === undefined) return undefined;
  const url =
    traces !== undefined
      ? checkedUrl('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', traces)
      : `${checkedUrl('OTEL_EXPORTER_OTLP_ENDPOINT', base!).replace(/\/+$/, '')}/v1/traces`;
  const ratio = settings.OTEL_TRACES_SAMPLER_ARG ?? 1;
  if (ratio > 1) throw new ConfigError(`OTEL_TRACES_SAMPLER_ARG must be a ratio of 0..1, got ${ratio}`);
  return Object.freeze({
    url,
    protocol: settings.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf',
    headers: Object.freeze(keyValues('OTEL_EXPORTER_OTLP_HEADERS', settings.OTEL_EXPORTER_OTLP_HEADERS)),
    serviceName: settings.OTEL_SERVICE_NAME,
    resourceAttributes: Object.freeze(keyValues('OTEL_RESOURCE_ATTRIBUTES', settings.OTEL_RESOURCE_ATTRIBUTES)),
    sampler: settings.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on',
    samplerRatio: ratio,
    exportDelayMs: settings.OTEL_BSP_SCHEDULE_DELAY ?? 5000,
  });
}
