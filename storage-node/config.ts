import path from 'node:path';
import { parseArgs } from 'node:util';
import { parseDecimalInteger } from '../domain/decimal';
import type { StorageNodeOptions } from './server';

export const USAGE = `usage: storage-node --port P --data DIR --keys-file FILE [--host H]
  [--tls-cert FILE --tls-key FILE] [--remember-request-ids N]
  [--kept-changes N]`;

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

/**
 * Parses the command line once at start-up into a frozen config. Throws an Error with a
 * one-line reason on anything unknown or out of range, so a bad launch fails at once.
 */
export function parseStorageNodeArgs(argv: string[]): Readonly<StorageNodeConfig> {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      port: { type: 'string' },
      host: { type: 'string', default: '127.0.0.1' },
      data: { type: 'string' },
      'keys-file': { type: 'string' },
      'tls-cert': { type: 'string' },
      'tls-key': { type: 'string' },
      'remember-request-ids': { type: 'string' },
      'kept-changes': { type: 'string' },
    },
  });
  const port = integerOption('port', values.port, 0, 65535);
  if (port === undefined) throw new Error('--port is required');
  if (!values.data) throw new Error('--data is required');
  // No unauthenticated mode: a node that anyone on its network can write is no whitelist.
  if (!values['keys-file']) throw new Error('--keys-file is required: the node accepts only requests signed with the service key');
  const certFile = values['tls-cert'];
  const keyFile = values['tls-key'];
  if (Boolean(certFile) !== Boolean(keyFile)) throw new Error('--tls-cert and --tls-key go together');
  return Object.freeze({
    port,
    host: values.host ?? '127.0.0.1',
    dataDir: path.resolve(values.data),
    keysFile: path.resolve(values['keys-file']),
    ...(certFile && keyFile ? { tls: Object.freeze({ certFile: path.resolve(certFile), keyFile: path.resolve(keyFile) }) } : {}),
    maxRememberedRequestIds: integerOption('remember-request-ids', values['remember-request-ids'], 1, 1e8),
    keptChanges: integerOption('kept-changes', values['kept-changes'], 1, 10_000),
  });
}
