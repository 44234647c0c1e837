import { parseDecimalInteger } from '../domain/decimal';
import { ConfigError } from './config-error';
import { SETTINGS, type SettingName, type Settings } from './settings';
import type { Env, SettingsOf, SettingsTable, Spec, ValueOf } from './setting-row';

/**
 * Reads settings from the environment: each variable of a table parsed by its row's kind, once;
 * a bad one fails with a ConfigError naming it. Entry points pass what they read down, so no
 * other module reads the environment.
 */

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
