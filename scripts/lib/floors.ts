import fs from 'node:fs';
import path from 'node:path';
import { importedModules } from './import-specifiers';

/**
 * The floors of the house, lowest first: a module imports only from its own floor or below, so a
 * reader goes down the house from an entry point and never has to climb. Folders on one floor do
 * not import each other unless listed in SAME_FLOOR_ALLOWED (workflows and activities meet only
 * through contracts/).
 */
export const FLOORS: ReadonlyArray<readonly string[]> = [
  // Pure logic and its vocabulary: the state machine, message building, hashing, validation.
  ['domain'],
  // The client SDK (its own package, client/): the HTTP calls a frontend makes, over domain's
  // signing message and intent hash.
  ['client'],
  // The shapes every part agrees on: the storage node's wire format, the Temporal names and
  // messages, the activities' signatures, the webhooks, the id patterns (they describe domain values).
  ['contracts'],
  // Small pieces of I/O every process uses.
  ['lib', 'config', 'db', 'tokens'],
  // What runs on a worker or a storage node.
  ['workflows', 'activities', 'storage-node'],
  // The processes: the HTTP API and the worker's assembly.
  ['api', 'worker'],
  // What drives or measures them.
  ['scripts', 'bench', 'test'],
];

/** Same-floor folder pairs that may import each other (importer → imported). */
const SAME_FLOOR_ALLOWED: ReadonlyArray<readonly [string, string]> = [
  ['config', 'lib'],
  ['db', 'lib'],
  ['db', 'config'],
  ['tokens', 'lib'],
  ['worker', 'api'],
  ['scripts', 'bench'],
  ['scripts', 'test'],
  ['bench', 'scripts'],
  ['bench', 'test'],
  ['test', 'scripts'],
  ['test', 'bench'],
];

const floorOf = (folder: string): number => FLOORS.findIndex((floor) => floor.includes(folder));

/**
 * The floors inside api/, by entry (a folder or a top-level file), lowest first: the HTTP edge and
 * the Temporal plumbing; the dependencies every route gets; the features; the status pages, which
 * read the features' answers; the operator routes and the OpenAPI document, which read the
 * features' contracts; the Koa app, its listeners, its entry point.
 */
export const API_FLOORS: ReadonlyArray<readonly string[]> = [
  ['http', 'temporal'],
  ['deps.ts'],
  ['executions', 'refunds', 'deposits', 'whitelists'],
  ['status'],
  ['operations'],
  ['app.ts'],
  ['server.ts'],
  ['main.ts'],
];

const apiFloorOf = (entry: string): number => API_FLOORS.findIndex((floor) => floor.includes(entry));

/** Every `.ts` file under the project's folders that have a floor. */
function sourceFiles(root: string): string[] {
  return FLOORS.flat()
    .filter((folder) => fs.existsSync(path.join(root, folder)))
    .flatMap((folder) =>
      fs
        .readdirSync(path.join(root, folder), { recursive: true, encoding: 'utf8' })
        .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))
        .map((f) => path.join(root, folder, f)),
    );
}

/** The project's own modules a file imports (type-only ones too: a type that climbs is a climb). */
function localImports(file: string): string[] {
  return importedModules(fs.readFileSync(file, 'utf8'))
    .map((m) => m.specifier)
    .filter((s) => s.startsWith('.'));
}

/** One import that climbs: `file` (relative to root) imports `target` from a higher floor, or a forbidden neighbour. */
export interface UpwardImport {
  file: string;
  target: string;
}

/** Top-level folders holding TypeScript that have no floor (their imports would go unchecked). */
export function unflooredFolders(root: string): string[] {
  const skip = new Set(['node_modules', 'dist']);
  const hasTs = (dir: string): boolean =>
    fs.readdirSync(dir, { withFileTypes: true }).some((e) => (e.isDirectory() ? hasTs(path.join(dir, e.name)) : e.name.endsWith('.ts')));
  return fs
    .readdirSync(root, { withFileTypes: true })
    .filter((e) => e.isDirectory() && !e.name.startsWith('.') && !skip.has(e.name) && floorOf(e.name) < 0)
    .map((e) => e.name)
    .filter((name) => hasTs(path.join(root, name)));
}

/** The imports that break the floors, in file order. */
export function upwardImports(root: string): UpwardImport[] {
  const problems: UpwardImport[] = [];
  for (const file of sourceFiles(root)) {
    const from = path.relative(root, file).split(path.sep)[0];
    for (const spec of localImports(file)) {
      const target = path.relative(root, path.resolve(path.dirname(file), spec)).split(path.sep)[0];
      if (target === from || target.startsWith('..') || floorOf(target) < 0) continue;
      const climbs = floorOf(target) > floorOf(from);
      const sideways = floorOf(target) === floorOf(from) && !SAME_FLOOR_ALLOWED.some(([a, b]) => a === from && b === target);
      if (climbs || sideways)
        problems.push({ file: path.relative(root, file), target: path.relative(root, path.resolve(path.dirname(file), spec)) });
    }
  }
  return [...problems, ...apiUpwardImports(root)];
}

/** Inside api/: the imports between its entries that climb API_FLOORS or go sideways. */
function apiUpwardImports(root: string): UpwardImport[] {
  const api = path.join(root, 'api');
  if (!fs.existsSync(api)) return [];
  const problems: UpwardImport[] = [];
  const entryOf = (file: string) => path.relative(api, file).split(path.sep)[0];
  for (const file of sourceFiles(root).filter((f) => f.startsWith(api + path.sep))) {
    const from = entryOf(file);
    for (const spec of localImports(file)) {
      const resolved = path.resolve(path.dirname(file), spec);
      if (!resolved.startsWith(api + path.sep)) continue;
      const rel = path.relative(api, resolved).split(path.sep);
      const target = rel.length === 1 ? `${rel[0]}.ts` : rel[0];
      if (target === from) continue;
      const [a, b] = [apiFloorOf(from), apiFloorOf(target)];
      if (a < 0 || b < 0 || b >= a) problems.push({ file: path.relative(root, file), target: path.relative(root, resolved) });
    }
  }
  return problems;
}
