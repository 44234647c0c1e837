import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv } from 'ajv';
import { COMBINED_FIELDS, SETTING_RULES, SWITCHED_FIELDS, type SettingsContext } from './combined-settings';
import { ConfigError } from './config-error';
import {
  fieldsOf,
  fileSchemaOf,
  resolveSettings,
  type CombinedFieldsOf,
  type FieldsOf,
  type ReadBy,
  type Reader,
  type Switched,
} from './derive-config';
import { projectRoot } from './project-root';
import { readSettings } from './read-settings';
import { SETTINGS, type ResolvedSettings } from './settings';

export { ConfigError, projectRoot };
export type { WebhookEndpoint } from './combined-settings';

/**
 * The service's settings, parsed once at start-up and passed down; nothing else reads env. Each
 * field comes from its row in config/settings.ts (the row's `config` path: `temporal.taskQueue`
 * is TEMPORAL_TASK_QUEUE's), or from a function of several settings (config/combined-settings.ts:
 * `temporal.tls`, `operator`, `webhooks`, `tracing`); `chain` and `workerDeployment` exist only
 * when CHAIN_RPC_URL is set and WORKER_VERSIONING is not `off`.
 */
export type Config = Switched<FieldsOf<typeof SETTINGS>, keyof typeof SWITCHED_FIELDS> & CombinedFieldsOf<typeof COMBINED_FIELDS>;

/**
 * The config one process holds: the fields of the settings whose row's `readBy` names it (and the
 * combined fields that name it). The API is handed an `ApiConfig` and the worker a
 * `WorkerConfig`, so a process that reads a setting its row does not list does not compile: the
 * "read by" column of docs/configuration.md is the type's source.
 */
export type ConfigOf<R extends Reader> = Switched<FieldsOf<ReadBy<typeof SETTINGS, R>>, keyof typeof SWITCHED_FIELDS> &
  CombinedFieldsOf<ReadBy<typeof COMBINED_FIELDS, R>>;
export type ApiConfig = ConfigOf<'api'>;
export type WorkerConfig = ConfigOf<'worker'>;

/** The config file's schema: each row's `file` key, with its type and range. */
const fileSchema = fileSchemaOf(SETTINGS);

/**
 * Reads the config file (`CONFIG_FILE`, default `config/service.json`), applies the environment
 * over it, validates everything and returns a frozen Config. Throws ConfigError with a message an
 * operator can act on.
 */
export function loadConfig(env: Readonly<Record<string, string | undefined>> = process.env): Config {
  return deepFreeze(configFields(env)) as unknown as Config;
}

/**
 * The config of one process (`loadConfig` checks every setting as it does, so a bad setting stops
 * each process alike), holding only the fields its settings' rows say it reads.
 */
export function loadConfigOf<R extends Reader>(reader: R, env: Readonly<Record<string, string | undefined>> = process.env): ConfigOf<R> {
  return deepFreeze(configFields(env, reader)) as unknown as ConfigOf<R>;
}

function configFields(env: Readonly<Record<string, string | undefined>>, reader?: Reader): Record<string, unknown> {
  const settings = readSettings(env);
  const file = settings.CONFIG_FILE ? path.resolve(settings.CONFIG_FILE) : path.join(projectRoot, 'config', 'service.json');
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ConfigError(`cannot read config file ${file}: ${(err as Error).message}`);
  }
  const ajv = new Ajv({ allErrors: true, strict: true });
  if (!ajv.validate(fileSchema, parsed)) {
    throw new ConfigError(`config file ${file} is invalid: ${ajv.errorsText(ajv.errors)}`);
  }
  const context: SettingsContext = {
    value: resolveSettings(SETTINGS, settings, parsed) as ResolvedSettings,
    env: settings,
    file: parsed as SettingsContext['file'],
  };
  for (const rule of SETTING_RULES) rule(context);
  const switched = Object.fromEntries(Object.entries(SWITCHED_FIELDS).map(([key, on]) => [key, on(context)]));
  const combined = Object.fromEntries(
    Object.entries(COMBINED_FIELDS).map(([key, field]) => [key, { readBy: field.readBy, make: () => field.make(context) }]),
  );
  return fieldsOf(SETTINGS, context.value, switched, combined, reader);
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
