import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import ts from 'typescript';
import { loadConfig, projectRoot } from '../../config/config';
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

/** For each setting of the service's table, the `Config` paths it changes (empty: none, e.g. CONFIG_FILE). */
export function configPathsOfSettings(): Map<SettingName, string[]> {
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
      out.set(name, differences(loadConfig(without), loadConfig(env)));
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

/** The `Config` path a property of `Config` (or of an object type written inside it) is declared at. */
function configPathOf(symbol: ts.Symbol | undefined, configFile: string): string | undefined {
  const declaration = symbol?.declarations?.[0];
  if (!declaration || path.resolve(declaration.getSourceFile().fileName) !== configFile) return undefined;
  const names: string[] = [];
  let node: ts.Node = declaration;
  while (ts.isPropertySignature(node)) {
    names.unshift(node.name.getText());
    const owner = node.parent;
    if (ts.isInterfaceDeclaration(owner)) return owner.name.text === 'Config' ? names.join('.') : undefined;
    if (!ts.isTypeLiteralNode(owner)) return undefined;
    node = owner.parent;
    while (ts.isUnionTypeNode(node) || ts.isParenthesizedTypeNode(node)) node = node.parent;
  }
  return undefined;
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
  const fieldsOf = (type: ts.Type) => type.getProperties().map((p) => configPathOf(p, configFile));
  /** The fields of `value`'s (Config) type that `wanted` names; undefined when `wanted` is the Config type itself. */
  const handedOn = (value: ts.Expression, wanted: ts.Type | undefined): string[] | undefined => {
    if (!wanted) return undefined;
    const own = checker.getNonNullableType(checker.getTypeAtLocation(value));
    const target = checker.getNonNullableType(wanted);
    if (target.getProperties().some((p) => configPathOf(p, configFile) !== undefined)) return [];
    const named = target.getProperties().map((p) => configPathOf(own.getProperty(p.name), configFile));
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
      const at = configPathOf(checker.getSymbolAtLocation(node.name), configFile);
      const outer = node.parent;
      const deeper =
        ts.isPropertyAccessExpression(outer) &&
        outer.expression === node &&
        configPathOf(checker.getSymbolAtLocation(outer.name), configFile) !== undefined;
      if (at && !deeper) use(node, at);
    } else if (ts.isBindingElement(node) && ts.isObjectBindingPattern(node.parent)) {
      const name = (node.propertyName ?? node.name).getText();
      const at = configPathOf(checker.getTypeAtLocation(node.parent).getProperty(name), configFile);
      if (at) reads.exact.add(at);
    } else if ((ts.isCallExpression(node) || ts.isNewExpression(node)) && node.arguments) {
      // The Config itself handed to a parameter of another type: the fields that type names.
      for (const arg of node.arguments) {
        if (ts.isPropertyAccessExpression(arg)) continue;
        const own = checker.getNonNullableType(checker.getTypeAtLocation(arg));
        if (!fieldsOf(own).some((f) => f !== undefined && !f.includes('.'))) continue;
        for (const field of handedOn(arg, checker.getContextualType(arg)) ?? []) reads.exact.add(field);
      }
    }
    ts.forEachChild(node, visit);
  };
  for (const file of files) if (path.resolve(file.fileName) !== configFile) visit(file);
  return reads;
}

/** Every path of a field the `Config` interface declares (`chain`, `chain.rpcUrl`, …). */
export function declaredConfigPaths(program: ts.Program): Set<string> {
  const source = program.getSourceFile(path.join(projectRoot, 'config', 'config.ts'))!;
  const out = new Set<string>();
  const walk = (members: ts.NodeArray<ts.TypeElement>, at: string[]) => {
    for (const member of members) {
      if (!ts.isPropertySignature(member)) continue;
      const here = [...at, member.name.getText(source)];
      out.add(here.join('.'));
      let type = member.type;
      while (type && (ts.isUnionTypeNode(type) || ts.isParenthesizedTypeNode(type)))
        type = ts.isParenthesizedTypeNode(type) ? type.type : type.types.find(ts.isTypeLiteralNode);
      if (type && ts.isTypeLiteralNode(type)) walk(type.members, here);
    }
  };
  for (const statement of source.statements)
    if (ts.isInterfaceDeclaration(statement) && statement.name.text === 'Config') walk(statement.members, []);
  return out;
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
