import { RECORDS_AND_CHAIN_SETTINGS } from './settings-records-and-chain';
import { RUNTIME_SETTINGS } from './settings-runtime';
import { SERVING_SETTINGS } from './settings-serving';
import type { ResolvedOf, SettingsOf, SettingsTable } from './setting-row';

/**
 * Every environment variable the service reads (the API, the worker, the storage node and their
 * launchers): one row each, with its type, default, config file key, the `Config` field it fills
 * and its meaning. Adding a setting is adding its row: config/config.ts derives the `Config`
 * field, its parse (env over file over default), the file's schema, and from its `readBy` whether
 * the API's and the worker's own config types hold it. The table in
 * docs/configuration.md "Settings" is rendered from this one (`npm run docs:settings`) in this
 * order, and a unit test fails when they differ.
 */
export const SETTINGS = {
  ...SERVING_SETTINGS,
  ...RECORDS_AND_CHAIN_SETTINGS,
  ...RUNTIME_SETTINGS,
} as const satisfies SettingsTable;

export type SettingName = keyof typeof SETTINGS;

/** The service's settings as the environment sets them. */
export type Settings = SettingsOf<typeof SETTINGS>;

/** The service's settings as it uses them: the environment's, else the config file's, else the default. */
export type ResolvedSettings = ResolvedOf<typeof SETTINGS>;
