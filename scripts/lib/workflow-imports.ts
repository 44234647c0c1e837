import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { importedModules } from './import-specifiers';

// Workflow code must stay deterministic: no I/O, no Node built-ins. A directory rule: every module
// under workflows/, domain/ (the pure logic) and contracts/ (the shapes), sandbox-safe whether a
// workflow uses it today or not, may value-import only packages and modules of those folders,
// never a Node built-in.
// Type-only imports are erased at build time and do not count. Temporal's bundler refuses
// built-ins too, but only when a worker starts; this says which file and which import, at lint time.
// Node-only helpers live beside their callers (e.g. api/executions/ed25519.ts, node:crypto).

const ALLOWED_DIRS = ['workflows', 'domain', 'contracts'];
const BUILTINS = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));

/** Value (not type-only) module specifiers of a TypeScript source. */
export function valueImports(source: string): string[] {
  return importedModules(source)
    .filter((m) => !m.typeOnly)
    .map((m) => m.specifier);
}

function resolveLocal(from: string, specifier: string): string | undefined {
  const base = path.resolve(path.dirname(from), specifier);
  for (const candidate of [`${base}.ts`, path.join(base, 'index.ts')]) if (existsSync(candidate)) return candidate;
  return undefined;
}

/** Problems found under `root` (a project root), as "file: import" lines; empty when clean. */
export function checkWorkflowImports(root: string): string[] {
  const problems: string[] = [];
  const start = ALLOWED_DIRS.flatMap((dir) =>
    existsSync(path.join(root, dir))
      ? readdirSync(path.join(root, dir))
          .filter((f) => f.endsWith('.ts'))
          .map((f) => path.join(root, dir, f))
      : [],
  );
  const seen = new Set<string>();
  const queue = [...start];
  while (queue.length > 0) {
    const file = queue.shift()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const rel = path.relative(root, file);
    for (const specifier of valueImports(readFileSync(file, 'utf8'))) {
      if (BUILTINS.has(specifier) || BUILTINS.has(specifier.split('/')[0])) {
        problems.push(`${rel}: imports the Node built-in ${specifier}`);
        continue;
      }
      if (!specifier.startsWith('.')) continue; // a package: the bundler checks what it pulls in
      const target = resolveLocal(file, specifier);
      if (!target) {
        problems.push(`${rel}: cannot resolve ${specifier}`);
        continue;
      }
      const dir = path.relative(root, target).split(path.sep)[0];
      if (!ALLOWED_DIRS.includes(dir)) {
        problems.push(`${rel}: imports ${specifier} (${dir}/ is not workflow-safe; use \`import type\`)`);
        continue;
      }
      queue.push(target);
    }
  }
  return problems;
}

/** A `patched()` or `deprecatePatch()` call: "file:line" and its patch id (when it is a string literal). */
export interface PatchCall {
  where: string;
  id?: string;
}

/**
 * Calls of `patched()` or `deprecatePatch()` under `workflows/` of `root`. A change to a workflow's
 * commands ships as a new worker version (decision 0068), so these are rare and temporary.
 */
export function findPatchCalls(root: string): PatchCall[] {
  const dir = path.join(root, 'workflows');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.ts'))
    .flatMap((f) => {
      // Comments may name the functions; only code counts. Blanked, not removed, so lines keep their numbers.
      const code = readFileSync(path.join(dir, f), 'utf8')
        .replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, ' '))
        .replace(/\/\/.*$/gm, '');
      return code.split('\n').flatMap((line, i) => {
        const call = /\b(?:patched|deprecatePatch)\s*\(\s*(?:(['"`])([^'"`]*)\1)?/.exec(line);
        return call ? [{ where: `workflows/${f}:${i + 1}`, ...(call[2] === undefined ? {} : { id: call[2] }) }] : [];
      });
    });
}

/**
 * The patch calls that no decision record in `docs/decisions/` accounts for: one that names the
 * patch id in backquotes and says when it will be removed (the record of the `deprecatePatch`
 * step and of the removal after it), as "file:line (id)".
 */
export function unrecordedPatchCalls(root: string): string[] {
  const dir = path.join(root, 'docs', 'decisions');
  const records = existsSync(dir)
    ? readdirSync(dir)
        .filter((f) => f.endsWith('.md'))
        .map((f) => readFileSync(path.join(dir, f), 'utf8'))
    : [];
  const accounted = (id: string) =>
    records.some((text) => text.includes(`\`${id}\``) && text.includes('deprecatePatch') && /\bremov(e|ed|al)\b/i.test(text));
  return findPatchCalls(root)
    .filter((call) => call.id === undefined || !accounted(call.id))
    .map((call) => `${call.where} (${call.id ?? 'no literal patch id'})`);
}
