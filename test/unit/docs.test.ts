import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createActivities } from '../../activities';
import { DUST_TRANSFERS_PER_ADDRESS } from '../../domain/owed-transfers';
import { buildOpenApiDocument } from '../../api/operations/openapi';
import { loadConfig, projectRoot } from '../../config/config';
import { FLOORS } from '../../scripts/lib/floors';
import { docSection } from '../../scripts/lib/doc-section';
import { renderComparison, renderSummary } from '../../bench/compare';
import type { BenchResults } from '../../bench/results';
import { renderTables } from '../../bench/table';
import { startBanner } from '../../scripts/lib/start-banner';
import * as registeredWorkflows from '../../workflows';

/** GitHub's anchor of a heading: lowercase, punctuation dropped, spaces to hyphens. */
const slug = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
const anchors = (text: string) => {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of text.split('\n')) {
    const m = /^#{1,6} (.+)$/.exec(line);
    if (!m) continue;
    const base = slug(m[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
};

const read = (file: string) => readFileSync(path.join(projectRoot, file), 'utf8');
/** The API reference: docs/api.md (the index) and the pages it links. */
const API_PAGES = ['docs/api.md', 'docs/api-executions.md', 'docs/api-whitelists.md', 'docs/api-refunds.md', 'docs/api-temporal-names.md'];
const pages = () => [
  'README.md',
  ...readdirSync(path.join(projectRoot, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
  ...readdirSync(path.join(projectRoot, 'docs', 'decisions')).map((f) => `docs/decisions/${f}`),
];

// The docs are kept true where that is cheap to check.
describe('docs: the pages match what exists', () => {
  it('when the OpenAPI document lists an operation, then one of the API pages (docs/api*.md) names it (METHOD path)', () => {
    const doc = buildOpenApiDocument(loadConfig({})) as { paths: Record<string, Record<string, unknown>> };
    const api = API_PAGES.map(read).join('\n');
    const missing: string[] = [];
    for (const [p, item] of Object.entries(doc.paths))
      for (const method of Object.keys(item))
        if (!api.includes(`${method.toUpperCase()} ${p}`)) missing.push(`${method.toUpperCase()} ${p}`);
    assert.deepEqual(missing, []);
  });

  it('when the README shows an npm command, then package.json has that script', () => {
    const scripts = JSON.parse(read('package.json')).scripts as Record<string, string>;
    const builtins = new Set(['install', 'ci', 'test', 'start']);
    const used = [...read('README.md').matchAll(/npm (?:run (?:--silent )?)?([a-z][a-z:-]*)/g)].map((m) => m[1]);
    assert.ok(used.includes('start') && used.includes('test'), `the README shows npm start and npm test: ${used.join(', ')}`);
    assert.deepEqual(
      used.filter((s) => !builtins.has(s) && !(s in scripts)),
      [],
    );
    for (const s of ['start', 'test']) assert.ok(s in scripts);
    assert.match(read('.ci/run'), /^npm ci && npm test$/m, ".ci/run runs the README's test command");
    assert.match(read('README.md'), /^npm ci && npm test /m);
  });

  it('when a page links to a relative path, then that file or folder exists', () => {
    const broken: string[] = [];
    for (const page of pages()) {
      const text = read(page);
      for (const m of text.matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)) {
        const target = m[1];
        if (/^[a-z]+:/.test(target)) continue; // http:, https:, mailto:
        if (!existsSync(path.join(projectRoot, path.dirname(page), target))) broken.push(`${page}: ${target}`);
      }
    }
    assert.deepEqual(broken, []);
  });

  it('when a link has an anchor (#section, page.md#section), then that page has that heading', () => {
    const broken: string[] = [];
    for (const page of pages()) {
      const text = read(page);
      for (const m of text.matchAll(/\]\(([^)#\s]*)#([^)\s]+)\)/g)) {
        const [, target, anchor] = m;
        if (/^[a-z]+:/.test(target)) continue;
        const file = target === '' ? page : path.join(path.dirname(page), target);
        if (!existsSync(path.join(projectRoot, file)) || !anchors(read(file)).has(anchor)) broken.push(`${page}: ${target}#${anchor}`);
      }
    }
    assert.deepEqual(broken, []);
  });

  it('when docs/performance.md is read, then it is at most 200 lines and its tables and those of docs/bench-tables.md are the ones rendered from the committed results', () => {
    const page = read('docs/performance.md');
    assert.ok(page.trimEnd().split('\n').length <= 200, `${page.trimEnd().split('\n').length} lines`);
    const results = (file: string) => JSON.parse(read(file)) as BenchResults;
    const [dev, cluster] = [results('bench/results.json'), results('bench/results-cluster.json')];
    assert.equal(docSection(page, 'bench-summary'), renderSummary(dev, cluster).trim(), 'run node dist/bench/compare.js --docs');
    assert.equal(docSection(page, 'bench-compare'), renderComparison(dev, cluster).trim());
    assert.equal(docSection(read('docs/bench-tables.md'), 'bench-table'), renderTables({ ...dev, curve: undefined }).trim());
  });

  it('when the docs are read, then no passage names an issue number or a session (readers cannot see them)', () => {
    const found = pages().flatMap((page) =>
      read(page)
        .split('\n')
        .filter((line) => /\b(issues? #?\d+|sessions?)\b/i.test(line))
        .map((line) => `${page}: ${line.trim()}`),
    );
    assert.deepEqual(found, []);
  });

  it('when a page points at a section of another (docs/x.md "Heading"), then that page has a heading that starts so', () => {
    const missing: string[] = [];
    let seen = 0;
    for (const page of pages()) {
      for (const m of read(page).matchAll(/(docs\/[a-z0-9/-]+\.md) "([^"]+)"/g)) {
        seen++;
        const [, target, heading] = m;
        if (!existsSync(path.join(projectRoot, target))) {
          missing.push(`${page}: ${target} (no such page)`);
          continue;
        }
        const headings = read(target)
          .split('\n')
          .filter((l) => /^#+ /.test(l))
          .map((l) => l.replace(/^#+ /, ''));
        if (!headings.some((h) => h.startsWith(heading))) missing.push(`${page}: ${target} "${heading}"`);
      }
    }
    assert.ok(seen > 5, `the scan found the section references (${seen})`);
    assert.deepEqual(missing, []);
  });

  it('when docs/development.md shows the layout, then it has one line per folder of the floors, in floor order', () => {
    const block = read('docs/development.md').split('## Layout')[1].split('```')[1];
    const folders = block
      .split('\n')
      .map((l) => /^([a-z-]+)\/\s/.exec(l)?.[1])
      .filter((f): f is string => f !== undefined);
    assert.deepEqual(folders, FLOORS.flat());
  });

  it('when the API or the worker registers an intent_* metric, then docs/operations.md "Metrics" has a row for it, and no row names one that does not exist', () => {
    const code = ['api', 'worker']
      .flatMap((dir) => readdirSync(path.join(projectRoot, dir), { recursive: true, encoding: 'utf8' }).map((f) => path.join(dir, f)))
      .filter((f) => f.endsWith('.ts'))
      .map(read)
      .join('\n');
    const registered = [...code.matchAll(/name: '(intent_[a-z_]+)'/g)].map((m) => m[1]).sort();
    const section = read('docs/operations.md').split('### Metrics')[1].split('\n### ')[0];
    const documented = [...section.matchAll(/^\| `(intent_[a-z_]+)`/gm)].map((m) => m[1]).sort();
    assert.ok(registered.length > 5, `found the metrics in the code: ${registered.join(', ')}`);
    assert.deepEqual(documented, registered);
  });

  it('when the worker registers an activity, then docs/api-temporal-names.md names it among the Temporal names', () => {
    // What createActivities answers is what the worker registers (building it touches none of its dependencies).
    const registered = Object.keys(createActivities({ tokens: {} as never, nodeRequestTimeoutMs: 0, nodeTransport: {} as never }));
    assert.ok(registered.length >= 4, 'the scan found the activities');
    const api = read('docs/api-temporal-names.md');
    assert.deepEqual(
      registered.filter((name) => !api.includes(`\`${name}\``)),
      [],
    );
  });

  it('when package.json depends on a package, then docs/development.md says why in its dependency table', () => {
    const pkg = JSON.parse(read('package.json')) as { dependencies: Record<string, string>; devDependencies: Record<string, string> };
    const table = read('docs/development.md').split('## Dependencies, one line each')[1].split('\n\n')[1];
    const named = new Set(
      table.split('\n').flatMap((row) =>
        (row.split('|')[1] ?? '')
          .replace(/^\s*dev:/, '')
          .split(',')
          .map((n) => n.trim().split(' ')[0]),
      ),
    );
    const missing = [...Object.keys(pkg.dependencies), ...Object.keys(pkg.devDependencies)].filter(
      (name) => !named.has(name) && !(name.startsWith('@types/') && named.has('@types/*')),
    );
    assert.deepEqual(missing, []);
  });

  it('when a page gives the dust cap of a deposit address, then it gives the one the watcher applies', () => {
    const n = String(DUST_TRANSFERS_PER_ADDRESS);
    assert.match(read('docs/integrate.md'), new RegExp(`after ${n} such transfers to one address`));
    assert.match(read('docs/operations.md'), new RegExp(`already had ${n} of them signalled`));
    assert.match(read('docs/decisions/0071-chain-watcher.md'), new RegExp(`fewer than ${n} of them`));
  });

  it('when the README shows the banner npm start prints, then it has each of its lines, in order (… stands for what differs per machine)', () => {
    const shown = read('README.md').split('```\nintent-service is up\n')[1]?.split('```')[0];
    assert.ok(shown !== undefined, 'the README shows the banner');
    const printed = startBanner({
      apiUrl: 'http://127.0.0.1:3000',
      operator: { host: '127.0.0.1', port: 9470 },
      temporalAddress: '127.0.0.1:7233',
      namespace: 'default',
      taskQueue: 'intent-service',
      uiUrl: 'http://127.0.0.1:8233',
      workerVersion: { deploymentName: 'intent-service', buildId: '1.0.0-0123456789ab' },
      promote: 'current',
      storageNodes: ['http://127.0.0.1:4101', 'http://127.0.0.1:4102', 'http://127.0.0.1:4103'],
      chainUrl: 'http://127.0.0.1:8545',
      depositSeedFile: '/home/me/intent-service/data/deposit-seed',
      testToken: { symbol: 'tUSD', address: '0x5FbDB2315678afecb367f032d93F642f64180aa3' },
      gasAccount: { address: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8', keyFile: '/home/me/intent-service/data/gas-account.key' },
      keysFile: '/home/me/intent-service/data/storage-node-keys',
      tokensFile: '/home/me/intent-service/data/tokens.json',
    }).slice(1);
    const lines = shown.trimEnd().split('\n');
    assert.equal(
      lines.length,
      printed.length,
      `the README shows ${lines.length} lines after the first, npm start prints ${printed.length}`,
    );
    lines.forEach((line, i) => {
      const pattern = new RegExp(
        `^${line
          .split('…')
          .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
          .join('.*')}$`,
      );
      assert.match(printed[i]!, pattern, `README banner line ${i + 2}`);
    });
  });

  it('when a page gives the path of the temporal CLI npm start builds, then it names the version scripts/temporal-cli.sh pins', () => {
    const pinned = /version="\$\{TEMPORAL_CLI_VERSION:-v([0-9.]+)\}"/.exec(read('scripts/temporal-cli.sh'))?.[1];
    assert.ok(pinned, 'scripts/temporal-cli.sh pins a version');
    const named = pages().flatMap((page) =>
      [...read(page).matchAll(/intent-service\/temporal-([0-9.]+)\/temporal\b/g)].map((m) => `${page}: ${m[1]}`),
    );
    assert.ok(
      named.some((n) => n.startsWith('README.md: ')),
      'the README gives the path',
    );
    assert.deepEqual(
      named.filter((n) => !n.endsWith(`: ${pinned}`)),
      [],
    );
  });

  it("when a page or a build script names the Go it needs, then it is one version, the pinned modules' `go` line where the module cache has them", () => {
    const places = [...pages(), 'scripts/temporal-cli.sh', 'scripts/temporal-cluster-bin.sh'];
    const named = places.flatMap((file) => [...read(file).matchAll(/\bGo (?:≥ |\(>= )([0-9.]+)/g)].map((m) => `${file}: ${m[1]}`));
    assert.ok(
      named.some((n) => n.startsWith('README.md: ')),
      'the README names the Go it needs',
    );
    const version = named[0]!.split(': ')[1]!;
    assert.deepEqual(
      named.filter((n) => !n.endsWith(`: ${version}`)),
      [],
    );
    // The go line of each pinned module, where a build has fetched it (the cache is per machine).
    const cli = /TEMPORAL_CLI_VERSION:-(v[0-9.]+)/.exec(read('scripts/temporal-cli.sh'))![1];
    const server = /TEMPORAL_SERVER_VERSION:-(v[0-9.]+)/.exec(read('scripts/temporal-cluster-bin.sh'))![1];
    const cache = path.join(os.homedir(), 'go', 'pkg', 'mod', 'cache', 'download'); // Go's default module cache
    for (const mod of [`github.com/temporalio/cli/@v/${cli}.mod`, `go.temporal.io/server/@v/${server}.mod`]) {
      const file = path.join(cache, mod);
      if (!existsSync(file)) continue;
      const needs = /^go ([0-9]+\.[0-9]+)/m.exec(readFileSync(file, 'utf8'))?.[1];
      assert.equal(version, needs, `${mod} needs go ${needs}`);
    }
  });

  it('when the README is read, then it is the front page: at most 150 lines', () => {
    assert.ok(read('README.md').split('\n').length <= 150);
  });

  it("when docs/architecture.md names a path of the repository, then it exists; its workflows are exactly those the worker registers, and its processes' entry points exist", () => {
    const page = read('docs/architecture.md');
    const paths = [
      ...page.matchAll(/`((?:api|worker|storage-node|scripts|db|domain|lib|config|contracts|tokens|workflows|activities)\/[\w./-]*)`/g),
    ].map((m) => m[1]!);
    assert.ok(paths.length >= 15, `paths named: ${paths.length}`);
    assert.deepEqual(
      paths.filter((p) => !existsSync(path.join(projectRoot, p))),
      [],
    );
    const table = page.split('## Workflows')[1]!.split('\n## ')[0]!;
    const listed = [...table.matchAll(/^\| `(\w+Workflow)` \|/gm)].map((m) => m[1]!).sort();
    const registered = Object.keys(registeredWorkflows).sort();
    assert.deepEqual(listed, registered);
    const processes = page.split('## Processes')[1]!.split('\n## ')[0]!;
    for (const entry of ['api/main.ts', 'worker/main.ts', 'storage-node/main.ts']) assert.ok(processes.includes(`\`${entry}\``), entry);
  });
});
