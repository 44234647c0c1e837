import path from 'node:path';
import { parseArgs } from 'node:util';
import { parseDecimalInteger } from '../domain/decimal';
import type { StorageNodeOptions } from './server';

export const USAGE = `usage: storage-node --port P --data DIR --keys-file FILE [--host H]
  [--public-url URL]... [--tls-cert FILE --tls-key FILE]
  [--remember-request-ids N] [--max-connections N] [--kept-changes N]`;

/** The node's command-line flags (docs/api-whitelists.md "Storage nodes" names each one; a test compares). */
export const STORAGE_NODE_FLAGS = {
  port: { type: 'string' },
  host: { type: 'string', default: '127.0.0.1' },
  data: { type: 'string' },
  'keys-file': { type: 'string' },
  'tls-cert': { type: 'string' },
  'tls-key': { type: 'string' },
  'public-url': { type: 'string', multiple: true },
  'remember-request-ids': { type: 'string' },
  'max-connections': { type: 'string' },
  'kept-changes': { type: 'string' },
} as const;

/** Addresses that mean every interface: the node cannot tell from them which address the service uses. */
const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '[::]', '']);

export interface StorageNodeConfig extends Omit<StorageNodeOptions, 'keys' | 'tls'> {
  port: number;
  host: string;
  /** The deployment's keys file (lib/node-keys-file.ts); main.ts reads it. */
  keysFile: string;
  /** PEM files of the node's certificate and key: it serves https. */
  tls?: { certFile: string; keyFile: string };
}

export function integerOption(name: string, raw: string | undefined, min: number, max: number): number | undefined {
  if (raw === undefined) return undefined;
  const value = parseDecimalInteger(raw);
  if (value === undefined || value < min || value > max) {
    throw new Error(`--${name} must be an integer of ${min}..${max}, got ${JSON.stringify(raw)}`);
  }
  return value;
}

/** A `--public-url`: an http(s) URL with no path, query or credentials (it names a node, nothing more). */
function checkPublicUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`--public-url must be a URL, got ${JSON.stringify(raw)}`);
  }
  if (
    (url.protocol !== 'http:' && url.protocol !== 'https:') ||
    url.username ||
    url.password ||
    url.search ||
    url.hash ||
    url.pathname !== '/'
  )
    throw new Error(`--public-url must be http(s)://host[:port] as the service addresses this node, got ${JSON.stringify(raw)}`);
  return raw;
}

/**
 * Parses the command line once at start-up into a frozen config. Throws an Error with a
 * one-line reason on anything unknown or out of range, so a bad launch fails at once.
 */
export function parseStorageNodeArgs(argv: string[]): Readonly<StorageNodeConfig> {
  const { values } = parseArgs({ args: argv, strict: true, allowPositionals: false, options: STORAGE_NODE_FLAGS });
  const port = integerOption('port', values.port, 0, 65535);
  if (port === undefined) throw new Error('--port is required');
  if (!values.data) throw new Error('--data is required');
  // No unauthenticated mode: a node that anyone on its network can write is no whitelist.
  if (!values['keys-file']) throw new Error('--keys-file is required: the node accepts only requests signed with the service key');
  const certFile = values['tls-cert'];
  const keyFile = values['tls-key'];
  if (Boolean(certFile) !== Boolean(keyFile)) throw new Error('--tls-cert and --tls-key go together');
  const host = values.host ?? '127.0.0.1';
  const publicUrls = (values['public-url'] ?? []).map(checkPublicUrl);
  // Requests are signed for the address the service sends them to; a node on every interface
  // cannot know which one that is.
  if (WILDCARD_HOSTS.has(host) && publicUrls.length === 0)
    throw new Error(`--public-url is required with --host ${host}: the URL the service uses for this node (STORAGE_NODES)`);
  return Object.freeze({
    port,
    host,
    ...(publicUrls.length > 0 ? { publicUrls: Object.freeze(publicUrls) } : {}),
    dataDir: path.resolve(values.data),
    keysFile: path.resolve(values['keys-file']),
    ...(certFile && keyFile ? { tls: Object.freeze({ certFile: path.resolve(certFile), keyFile: path.resolve(keyFile) }) } : {}),
    maxRememberedRequestIds: integerOption('remember-request-ids', values['remember-request-ids'], 1, 1e8),
    maxConnections: integerOption('max-connections', values['max-connections'], 1, 1e6),
    keptChanges: integerOption('kept-changes', values['kept-changes'], 1, 10_000),
  });
}
