import path from 'node:path';
import { parseArgs } from 'node:util';
import { parseDecimalInteger } from '../domain/decimal';
import { FAULT_MODES, type FaultMode } from './protocol';
import type { StorageNodeOptions } from './server';
import { MAX_DELAY_MS } from './validate';

export const USAGE = `usage: storage-node --port P --data DIR [--host H]
  [--compact-after-batches N] [--remember-batches N]
  [--delay-ms N] [--fault none|garbage|http500|truncated|wrong-shape] [--enable-fault-api]   (fault tests only)`;

export interface StorageNodeConfig extends StorageNodeOptions {
  port: number;
  host: string;
}

function integerOption(name: string, raw: string | undefined, min: number, max: number): number | undefined {
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
      'compact-after-batches': { type: 'string' },
      'remember-batches': { type: 'string' },
      'delay-ms': { type: 'string' },
      fault: { type: 'string' },
      'enable-fault-api': { type: 'boolean', default: false },
    },
  });
  const port = integerOption('port', values.port, 0, 65535);
  if (port === undefined) throw new Error('--port is required');
  if (!values.data) throw new Error('--data is required');
  const fault = values.fault ?? 'none';
  if (!(FAULT_MODES as readonly string[]).includes(fault)) {
    throw new Error(`--fault must be one of ${FAULT_MODES.join(', ')}, got ${JSON.stringify(fault)}`);
  }
  return Object.freeze({
    port,
    host: values.host ?? '127.0.0.1',
    dataDir: path.resolve(values.data),
    compactAfterBatches: integerOption('compact-after-batches', values['compact-after-batches'], 1, 1e9),
    maxRememberedBatches: integerOption('remember-batches', values['remember-batches'], 1, 1e9),
    faults: Object.freeze({
      delayMs: integerOption('delay-ms', values['delay-ms'], 0, MAX_DELAY_MS) ?? 0,
      fault: fault as FaultMode,
    }),
    enableFaultApi: values['enable-fault-api'] ?? false,
  });
}
