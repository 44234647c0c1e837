import { ConfigError } from './config-error';
import type { Row, SettingsTable, ValueOf } from './setting-row';

/**
 * The `Config` made from a settings table: each row with a `config` path fills that field with
 * its value (the environment's, else the config file's, else the default), through its
 * `toConfig` if it has one. The types below compute the same thing from the table's type, so a
 * row added to the table is a typed `Config` field with nothing else to write.
 */

/** The value a row puts in its field: its `toConfig`'s result, else its parsed value (undefined when it has no default). */
type FieldValueOf<R> = R extends { toConfig: (value: never) => infer V }
  ? V
  : R extends { default: unknown }
    ? ValueOf<R>
    : ValueOf<R> | undefined;

/** `{ a: { b: V } }` for the path `a.b`; a field that may be undefined is optional. */
export type AtPath<P extends string, V> = P extends `${infer Head}.${infer Rest}`
  ? { readonly [K in Head]: AtPath<Rest, V> }
  : undefined extends V
    ? { readonly [K in P]?: V }
    : { readonly [K in P]: V };

export type UnionToIntersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void ? I : never;

/** The fields the rows of a table fill, as one object type. */
export type FieldsOf<T extends SettingsTable> = UnionToIntersection<
  { [K in keyof T]: T[K] extends { config: infer P extends string } ? AtPath<P, FieldValueOf<T[K]>> : never }[keyof T]
>;

/** A service process that holds a config of its own: the fields of the settings whose `readBy` names it. */
export type Reader = 'api' | 'worker';

/** Whether a `readBy` column (`api, worker, scripts`) names the process. */
export function readByNames(readBy: string, reader: Reader): boolean {
  return readBy.split(', ').includes(reader);
}

/** The entries of `T` (rows, or combined fields) whose `readBy` names the process `R`. */
export type ReadBy<T extends Record<string, { readBy: string }>, R extends Reader> = {
  [K in keyof T as T[K]['readBy'] extends R | `${R}, ${string}` | `${string}, ${R}` | `${string}, ${R}, ${string}` ? K : never]: T[K];
};

/** A field made of several settings: the function that makes it, and the processes that read it. */
export interface CombinedField {
  readonly readBy: string;
  readonly make: (context: never) => unknown;
}

/** The fields functions of several settings fill, by path, as one object type. */
export type CombinedFieldsOf<F extends Record<string, CombinedField>> = UnionToIntersection<
  { [P in keyof F & string]: AtPath<P, ReturnType<F[P]['make']>> }[keyof F & string]
>;

/** `C` with the objects `K` optional (they exist only when a setting turns them on). */
export type Switched<C, K extends PropertyKey> = Omit<C, K> & { readonly [P in K & keyof C]?: C[P] };

/** The value at a dotted path of a JSON object (`RequestConfig.MaxBatchLen`), if any. */
function valueAt(json: unknown, dotted: string): unknown {
  let at = json;
  for (const key of dotted.split('.')) at = at && typeof at === 'object' ? (at as Record<string, unknown>)[key] : undefined;
  return at;
}

/**
 * Each setting of `table`: the environment's value, else the file's (keys of arrays, `list[].key`,
 * are read by the function that reads the array), else the row's default.
 */
export function resolveSettings(table: SettingsTable, env: Readonly<Record<string, unknown>>, file: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, row] of Object.entries(table)) {
    const fromFile = row.file && !row.file.includes('[]') ? valueAt(file, row.file) : undefined;
    out[name] = env[name] ?? fromFile ?? ('default' in row ? row.default : undefined);
  }
  return out;
}

function put(target: Record<string, unknown>, dotted: string, value: unknown): void {
  const keys = dotted.split('.');
  let at = target;
  for (const key of keys.slice(0, -1)) at = (at[key] ??= {}) as Record<string, unknown>;
  at[keys[keys.length - 1]] = value;
}

/**
 * The config object: the rows' fields, then the `switched` objects that are off set to undefined
 * (their rows' `toConfig` is not run), then the `combined` fields. With a `reader`, only the rows
 * and combined fields whose `readBy` names it: what that process's config type holds. Every row's
 * `toConfig` and every combined field is still made, whoever reads it, so that a bad setting stops
 * each process alike.
 */
export function fieldsOf(
  table: SettingsTable,
  resolved: Readonly<Record<string, unknown>>,
  switched: Readonly<Record<string, boolean>>,
  combined: Readonly<Record<string, { readonly readBy: string; readonly make: () => unknown }>>,
  reader?: Reader,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const wanted = (readBy: string) => reader === undefined || readByNames(readBy, reader);
  for (const [name, row] of Object.entries(table) as [string, Row][]) {
    if (!row.config) continue;
    if (switched[row.config.split('.')[0]] === false) continue;
    const value = row.toConfig ? (row.toConfig as (v: unknown) => unknown)(resolved[name]) : resolved[name];
    if (wanted(row.readBy)) put(out, row.config, value);
  }
  for (const [key, on] of Object.entries(switched)) if (!on) out[key] = undefined;
  for (const [dotted, field] of Object.entries(combined)) {
    const value = field.make();
    if (wanted(field.readBy)) put(out, dotted, value);
  }
  return out;
}

type JsonSchema = Record<string, unknown>;

const objectSchema = (): JsonSchema => ({ type: 'object', additionalProperties: false, properties: {} });

function leafSchema(name: string, row: Row, inArray: boolean): JsonSchema {
  switch (row.kind) {
    case 'integer':
      return row.max === undefined ? { type: 'integer', minimum: row.min } : { type: 'integer', minimum: row.min, maximum: row.max };
    case 'string':
      return { type: 'string', minLength: 1 };
    case 'list':
      return inArray ? { type: 'string', minLength: 1 } : { type: 'array', items: { type: 'string', minLength: 1 } };
    case 'integer-or-off':
      return {
        anyOf: [
          { type: 'integer', minimum: row.min, maximum: row.max },
          { type: 'string', const: 'off' },
        ],
      };
    case 'number':
    case 'flag':
    case 'enum':
      // No file key is of these kinds yet: give the row's schema here before giving it a `file`.
      throw new ConfigError(`${name}: the config file has no ${row.kind} keys (derive-config.ts gives their schema)`);
  }
}

/**
 * The JSON schema of the config file: each row's `file` key with the row's type and range;
 * `list[].key` rows make `list` an array of objects that must have every such key.
 */
export function fileSchemaOf(table: SettingsTable): JsonSchema {
  const root = objectSchema();
  (root.properties as JsonSchema).$comment = { type: 'string' };
  for (const [name, row] of Object.entries(table) as [string, Row][]) {
    if (!row.file) continue;
    const [outer, inner] = row.file.split('[].');
    const keys = outer.split('.');
    let at = root;
    for (const key of keys.slice(0, -1)) at = ((at.properties as JsonSchema)[key] ??= objectSchema()) as JsonSchema;
    const last = keys[keys.length - 1];
    if (inner === undefined) {
      (at.properties as JsonSchema)[last] = leafSchema(name, row, false);
      continue;
    }
    const array = ((at.properties as JsonSchema)[last] ??= { type: 'array', items: { ...objectSchema(), required: [] } }) as JsonSchema;
    const items = array.items as JsonSchema;
    (items.properties as JsonSchema)[inner] = leafSchema(name, row, true);
    (items.required as string[]).push(inner);
  }
  return root;
}
