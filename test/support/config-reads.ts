import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import ts from 'typescript';
import { loadConfig, loadConfigOf, projectRoot } from '../../config/config';
import type { Reader } from '../../config/derive-config';
import { SETTINGS, type SettingName } from '../../config/settings';

/**
 * What a process really reads of the settings, found in the code: the `Config` fields that each
 * setting fills (by loading the config with that one variable set), and the `Config` fields that
 * the source files an entry point imports (transitively) read. A setting is read by a process when
 * the process reads a field the setting fills, or an object above it (`config.chain` passed on
 * whole reads everything under it).
 */

/** A value of each setting that differs from its default and passes its checks (with `BASE_ENV`). */
const SAMPLES: Partial<Record<SettingName, Record<string, string>>> = {
  TEMPORAL_ADDRESS: { TEMPORAL_ADDRESS: 'temporal.example:7233' },
  TEMPORAL_TLS: { TEMPORAL_TLS: '1' },
  TEMPORAL_TLS_CERT: { TEMPORAL_TLS_CERT: '/c.pem', TEMPORAL_TLS_KEY: '/k.pem' },
  TEMPORAL_TLS_KEY: { TEMPORAL_TLS_CERT: '/c.pem', TEMPORAL_TLS_KEY: '/k.pem' },
  TEMPORAL_TLS_SERVER_NAME: { TEMPORAL_TLS: '1', TEMPORAL_TLS_SERVER_NAME: 'temporal.example' },
  STORAGE_NODES: { STORAGE_NODES: 'http://node.example:1' },
  WHITELIST_TIMEOUT_MS: { WHITELIST_TIMEOUT_MS: '7' },
  ALLOWED_DOMAINS: { ALLOWED_DOMAINS: 'example.com' },
  TRUST_PROXY: { TRUST_PROXY: 'loopback' },
  DATABASE_URL: { DATABASE_URL: 'postgres://u@db.example/d' },
  CHAIN_RPC_URL: { CHAIN_RPC_URL: 'http://chain.example:8545' },
  DEPOSIT_CONFIRMATIONS: { DEPOSIT_CONFIRMATIONS: '7' },
  DEPOSIT_TOKENS: { DEPOSIT_TOKENS: 'evm:1:0x0000000000000000000000000000000000000001=TOK:6' },
  REFUND_LIMITS: { REFUND_LIMITS: 'evm:5=7' },
  CHAIN_EXPLORERS: { CHAIN_EXPLORERS: 'evm:5=https://explorer.example' },
  REFUND_MINIMUMS: { REFUND_MINIMUMS: 'evm:5:TOK=3' },
  REFUND_GAS_KEY_FILE: { REFUND_GAS_KEY_FILE: '/gas.key' },
  WEBHOOK_URLS: { WEBHOOK_URLS: 'https://hook.example/a', WEBHOOK_SECRETS: 'whsec_AAAAAAAAAAAAAAAAAAAAAAAA' },
  WEBHOOK_SECRETS: { WEBHOOK_URLS: 'https://hook.example/a', WEBHOOK_SECRETS: 'whsec_AAAAAAAAAAAAAAAAAAAAAAAA' },
  CORS_ORIGINS: { CORS_ORIGINS: 'https://app.example' },
  OPERATOR_HOST: { OPERATOR_HOST: '10.0.0.9' },
  WORKER_DEPLOYMENT_NAME: { WORKER_DEPLOYMENT_NAME: 'other' },
  OTEL_SDK_DISABLED: { OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel.example:4318' },
  OTEL_EXPORTER_OTLP_ENDPOINT: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel.example:4318' },
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://otel.example:4318/t' },
  OTEL_EXPORTER_OTLP_HEADERS: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel.example:4318', OTEL_EXPORTER_OTLP_HEADERS: 'a=b' },
  OTEL_RESOURCE_ATTRIBUTES: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel.example:4318', OTEL_RESOURCE_ATTRIBUTES: 'a=b' },
};

/** Settings that are set together or not at all. */
const PAIRS: Partial<Record<SettingName, SettingName>> = {
  TEMPORAL_TLS_CERT: 'TEMPORAL_TLS_KEY',
  TEMPORAL_TLS_KEY: 'TEMPORAL_TLS_CERT',
  WEBHOOK_SECRETS: 'WEBHOOK_URLS',
};

function sampleOf(name: SettingName): Record<string, string> {
  const fixed = SAMPLES[name];
  if (fixed) return fixed;
  const row = SETTINGS[name] as { kind: string; min?: number; max?: number; default?: unknown; values?: readonly string[] };
  const tracingOn: Record<string, string> = name.startsWith('OTEL_') ? { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel.example:4318' } : {};
  switch (row.kind) {
    case 'integer':
    case 'integer-or-off':
      if (typeof row.default !== 'number') return { ...tracingOn, [name]: String((row.min ?? 0) + 3) };
      return { ...tracingOn, [name]: String(row.max !== undefined && row.default + 1 > row.max ? row.default - 1 : row.default + 1) };
    case 'number':
      return { ...tracingOn, [name]: '0.25' };
    case 'enum':
      return { ...tracingOn, [name]: row.values!.find((v) => v !== row.default)! };
    case 'flag':
      return { [name]: '1' };
    default:
      return { ...tracingOn, [name]: `/sample/${name.toLowerCase()}` };
  }
}

/** Every path below which two JSON values differ. */
function differences(a: unknown, b: unknown, at: string[] = []): string[] {
  if (a && b && typeof a === 'object' && typeof b === 'object' && !Array.isArray(a) && !Array.isArray(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    return [...keys].flatMap((k) => differences((a as any)[k], (b as any)[k], [...at, k]));
  }
  const text = (v: unknown) => JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? `${x}n` : x));
  return text(a) === text(b) ? [] : [at.join('.')];
}

/**
 * For each setting of the service's table, the `Config` paths it changes (empty: none, e.g.
 * CONFIG_FILE); with a `reader`, the paths it changes in that process's config (`loadConfigOf`).
 */
export function configPathsOfSettings(reader?: Reader): Map<SettingName, string[]> {
  const load = (env: Record<string, string | undefined>): unknown => (reader ? loadConfigOf(reader, env) : loadConfig(env));
  const dir = mkdtempSync(path.join(tmpdir(), 'config-reads-'));
  try {
    const file = path.join(dir, 'service.json');
    writeFileSync(file, '{}');
    const base = { CONFIG_FILE: file, CHAIN_RPC_URL: 'http://127.0.0.1:8545' };
    const out = new Map<SettingName, string[]>();
    for (const name of Object.keys(SETTINGS) as SettingName[]) {
      if (name === 'CONFIG_FILE') continue;
      const env: Record<string, string | undefined> = { ...base, ...sampleOf(name) };
      // The setting's own effect: the config with it against the same config without it.
      const without = { ...env, [name]: undefined, ...(PAIRS[name] ? { [PAIRS[name]]: undefined } : {}) };
      out.set(name, differences(load(without), load(env)));
    }
    return out;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The repository's TypeScript program (every file tsconfig.json includes). */
export function repositoryProgram(): ts.Program {
  const configFile = path.join(projectRoot, 'tsconfig.json');
  const parsed = ts.parseJsonConfigFileContent(ts.readConfigFile(configFile, ts.sys.readFile).config, ts.sys, projectRoot);
  return ts.createProgram({ rootNames: parsed.fileNames, options: parsed.options });
}

/** The repository's source files an entry point imports, itself included, following relative imports. */
export function importClosure(program: ts.Program, entry: string): ts.SourceFile[] {
  const seen = new Map<string, ts.SourceFile>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    const source = program.getSourceFile(file);
    if (!source) return;
    seen.set(file, source);
    for (const statement of source.statements) {
      const specifier =
        (ts.isImportDeclaration(statement) || ts.isExportDeclaration(statement)) && statement.moduleSpecifier
          ? (statement.moduleSpecifier as ts.StringLiteral).text
          : undefined;
      if (!specifier?.startsWith('.')) continue;
      const resolved = ts.resolveModuleName(specifier, file, program.getCompilerOptions(), ts.sys).resolvedModule;
      if (resolved && !resolved.isExternalLibraryImport) visit(path.resolve(resolved.resolvedFileName));
    }
  };
  visit(path.resolve(projectRoot, entry));
  return [...seen.values()];
}

/**
 * The `Config` types as the checker sees them (config/config.ts derives them from the settings table):
 * every field's path, and the object types written for it (the root, `temporal`, `chain`, …) with
 * their paths. A named interface (`TracingConfig`), an array or a record is a field, not an object
 * of paths, as it was when the type was written out by hand.
 */
interface ConfigShape {
  readonly declared: Set<string>;
  readonly objects: Map<ts.Type, string>;
}

const shapes = new WeakMap<ts.Program, ConfigShape>();

function configShape(program: ts.Program): ConfigShape {
  const known = shapes.get(program);
  if (known) return known;
  const checker = program.getTypeChecker();
  const configFile = path.join(projectRoot, 'config', 'config.ts');
  const source = program.getSourceFile(configFile)!;
  // The whole Config, and each process's own (ApiConfig, WorkerConfig): the same paths.
  const aliases = ['Config', 'ApiConfig', 'WorkerConfig'].map((name) => {
    const alias = source.statements.find((s): s is ts.TypeAliasDeclaration => ts.isTypeAliasDeclaration(s) && s.name.text === name);
    if (!alias) throw new Error(`${configFile} declares no type ${name}`);
    return alias;
  });
  const derivation = path.join(projectRoot, 'config', 'derive-config.ts');
  const isObjectOfPaths = (type: ts.Type) => {
    if (!(type.flags & ts.TypeFlags.Object) && !type.isIntersection()) return false;
    if (checker.isArrayType(type) || checker.isTupleType(type) || type.getCallSignatures().length > 0) return false;
    const aliasFile = type.aliasSymbol?.declarations?.[0]?.getSourceFile().fileName;
    if (aliasFile !== undefined && path.resolve(aliasFile) !== derivation) return false;
    const declaration = type.getSymbol()?.declarations?.[0];
    return !(declaration && (ts.isInterfaceDeclaration(declaration) || ts.isClassDeclaration(declaration)));
  };
  const shape: ConfigShape = { declared: new Set(), objects: new Map() };
  const walk = (type: ts.Type, at: string) => {
    shape.objects.set(type, at);
    for (const property of type.getProperties()) {
      const here = at === '' ? property.name : `${at}.${property.name}`;
      shape.declared.add(here);
      const field = checker.getNonNullableType(checker.getTypeOfSymbol(property));
      if (isObjectOfPaths(field)) walk(field, here);
    }
  };
  for (const alias of aliases) walk(checker.getTypeAtLocation(alias.name), '');
  shapes.set(program, shape);
  return shape;
}

/** The `Config` path of an object type: its own, or that of the object a mapped view of it is made from (`Pick<Config, …>`, `Partial<Config['sse']>`). */
function objectPathOf(program: ts.Program, type: ts.Type): string | undefined {
  const { objects } = configShape(program);
  const checker = program.getTypeChecker();
  const own = checker.getNonNullableType(type);
  const direct = objects.get(own);
  if (direct !== undefined) return direct;
  const viewed = own.aliasTypeArguments?.[0];
  return viewed === undefined ? undefined : objects.get(checker.getNonNullableType(viewed));
}

/** The `Config` path of the property `name` of a value of type `owner`, if `owner` is a Config object. */
function configPathOf(program: ts.Program, owner: ts.Type, name: string): string | undefined {
  const at = objectPathOf(program, owner);
  if (at === undefined) return undefined;
  const field = at === '' ? name : `${at}.${name}`;
  return configShape(program).declared.has(field) ? field : undefined;
}

/** The `Config` paths some files read: `whole` objects handed on (everything under them is read), `exact` fields. */
export interface ConfigReads {
  readonly exact: Set<string>;
  readonly whole: Set<string>;
}

/**
 * The `Config` paths the files read. A field read by name (`config.chain.rpcUrl`, `{ chain } =
 * config`) is read exactly; an object only tested (`if (config.chain)`) or kept in a variable of
 * its own type is read exactly too (its fields are seen where they are read). An object handed to
 * a parameter of another type is read for each field that type names (`loadNodeTransport(config)`
 * reads `storageNodeKeysFile` and `storageNodeCaFile`); handed anywhere else, it is read whole.
 */
export function configPathsRead(program: ts.Program, files: readonly ts.SourceFile[]): ConfigReads {
  const checker = program.getTypeChecker();
  const configFile = path.join(projectRoot, 'config', 'config.ts');
  const reads: ConfigReads = { exact: new Set(), whole: new Set() };
  /** The fields of `value`'s (Config) type that `wanted` names; undefined when `wanted` is the Config type itself. */
  const handedOn = (value: ts.Expression, wanted: ts.Type | undefined): string[] | undefined => {
    if (!wanted) return undefined;
    const own = checker.getNonNullableType(checker.getTypeAtLocation(value));
    const target = checker.getNonNullableType(wanted);
    if (objectPathOf(program, target) !== undefined) return [];
    const named = target.getProperties().map((p) => configPathOf(program, own, p.name));
    return named.filter((n): n is string => n !== undefined);
  };
  const use = (node: ts.Expression, at: string) => {
    const parent = node.parent;
    const tested =
      (ts.isBinaryExpression(parent) &&
        [
          ts.SyntaxKind.AmpersandAmpersandToken,
          ts.SyntaxKind.BarBarToken,
          ts.SyntaxKind.EqualsEqualsEqualsToken,
          ts.SyntaxKind.ExclamationEqualsEqualsToken,
        ].includes(parent.operatorToken.kind) &&
        (parent.left === node || parent.operatorToken.kind !== ts.SyntaxKind.AmpersandAmpersandToken)) ||
      (ts.isPrefixUnaryExpression(parent) && parent.operator === ts.SyntaxKind.ExclamationToken) ||
      (ts.isIfStatement(parent) && parent.expression === node) ||
      (ts.isConditionalExpression(parent) && parent.condition === node) ||
      (ts.isVariableDeclaration(parent) && parent.type === undefined);
    if (tested || ts.isPropertyAccessExpression(parent) || ts.isElementAccessExpression(parent)) {
      reads.exact.add(at);
      return;
    }
    const handed = ts.isCallExpression(parent) || ts.isNewExpression(parent) ? handedOn(node, checker.getContextualType(node)) : undefined;
    if (handed === undefined) reads.whole.add(at);
    else for (const field of [at, ...handed]) reads.exact.add(field);
  };
  const visit = (node: ts.Node) => {
    if (ts.isPropertyAccessExpression(node)) {
      const at = configPathOf(program, checker.getTypeAtLocation(node.expression), node.name.text);
      const outer = node.parent;
      const deeper =
        ts.isPropertyAccessExpression(outer) &&
        outer.expression === node &&
        configPathOf(program, checker.getTypeAtLocation(node), outer.name.text) !== undefined;
      if (at && !deeper) use(node, at);
    } else if (ts.isBindingElement(node) && ts.isObjectBindingPattern(node.parent)) {
      const name = (node.propertyName ?? node.name).getText();
      const at = configPathOf(program, checker.getTypeAtLocation(node.parent), name);
      if (at) reads.exact.add(at);
    } else if ((ts.isCallExpression(node) || ts.isNewExpression(node)) && node.arguments) {
      // The Config itself handed to a parameter of another type: the fields that type names.
      for (const arg of node.arguments) {
        if (ts.isPropertyAccessExpression(arg)) continue;
        const own = checker.getNonNullableType(checker.getTypeAtLocation(arg));
        if (objectPathOf(program, own) !== '') continue;
        for (const field of handedOn(arg, checker.getContextualType(arg)) ?? []) reads.exact.add(field);
      }
    }
    ts.forEachChild(node, visit);
  };
  for (const file of files) if (path.resolve(file.fileName) !== configFile) visit(file);
  return reads;
}

/** Every path of a field the `Config` type has (`chain`, `chain.rpcUrl`, …). */
export function declaredConfigPaths(program: ts.Program): Set<string> {
  return new Set(configShape(program).declared);
}

/** A filled path cut to the `Config` field it is under (`tracing.headers.a` is `tracing`). */
export function declaredPathOf(declared: ReadonlySet<string>, filled: string): string {
  const parts = filled.split('.');
  for (let n = parts.length; n > 0; n--) if (declared.has(parts.slice(0, n).join('.'))) return parts.slice(0, n).join('.');
  return filled;
}

/** Whether a process that reads `read` reads a setting that fills `filled`. */
export function readsAny(read: ConfigReads, filled: readonly string[]): boolean {
  return filled.some((f) => read.exact.has(f) || [...read.whole].some((r) => f === r || f.startsWith(`${r}.`)));
}
