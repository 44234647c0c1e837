/**
 * What one row of a settings table says about one environment variable: how its text is parsed
 * (`kind`), its default, the config file key it overrides, the `Config` field it fills, who reads
 * it and what it means. The service's table is config/settings.ts; the scripts, tests and bench
 * have their own tables of the same rows.
 */

type Spec =
  | { kind: 'integer'; min: number; max?: number; default?: number }
  /** An integer, or the word `off` for none (parsed as `'off'`). */
  | { kind: 'integer-or-off'; min: number; max: number; default?: number }
  | { kind: 'number'; min: number; default?: number }
  | { kind: 'string'; default?: string }
  /** Comma-separated; blanks dropped. */
  | { kind: 'list'; default?: readonly string[] }
  /** `1` for on; unset or empty for off. */
  | { kind: 'flag' }
  | { kind: 'enum'; values: readonly string[]; caseInsensitive?: boolean; default?: string };

export type { Spec };

export type Row = Spec & {
  /**
   * The key in config/service.json that the variable overrides, if any: a dotted path
   * (`temporal.taskQueue`); `list[].key` is one key of each object of the array `list`.
   */
  file?: string;
  /**
   * The `Config` field the setting fills, a dotted path (`temporal.taskQueue`): its value is the
   * environment's, else the file's, else the default, then `toConfig`'s if the row has one.
   * Unset: the setting is read by a function of several settings (config/combined-settings.ts).
   */
  config?: string;
  /** Turns the value into the field's (a path made absolute, a list checked); the field's type is its result. */
  toConfig?: (value: never) => unknown;
  /** The default as the docs say it, where it is not a plain value. */
  defaultText?: string;
  readBy:
    | 'api'
    | 'worker'
    | 'api, worker'
    | 'api, scripts'
    | 'api, worker, scripts'
    | 'worker, scripts'
    | 'api, worker, storage node'
    | 'npm run cluster'
    | 'tests'
    | 'scripts'
    | 'bench';
  description: string;
};

/** A table of settings: the service's (config/settings.ts), or a tool's own (scripts/lib/settings.ts, scripts/lib/test-settings.ts, bench/settings.ts). */
export type SettingsTable = Record<string, Row>;

/** The type a row's text parses to. */
export type ValueOf<S> = S extends { kind: 'integer' | 'number' }
  ? number
  : S extends { kind: 'integer-or-off' }
    ? number | 'off'
    : S extends { kind: 'list' }
      ? string[]
      : S extends { kind: 'flag' }
        ? boolean
        : S extends { kind: 'enum'; values: readonly (infer V)[] }
          ? V
          : string;

/** What the environment sets of a table's variables, parsed; a variable that is unset (or empty) is absent. */
export type SettingsOf<T extends SettingsTable> = { readonly [K in keyof T]?: ValueOf<T[K]> };

/** Each variable of a table as the service uses it: the environment's, else the file's, else the default (undefined when it has none). */
export type ResolvedOf<T extends SettingsTable> = {
  readonly [K in keyof T]: T[K] extends { default: unknown } ? ValueOf<T[K]> : ValueOf<T[K]> | undefined;
};

/** The environment as a process sees it. */
export type Env = Readonly<Record<string, string | undefined>>;
