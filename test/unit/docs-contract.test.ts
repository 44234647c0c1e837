import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { buildOpenApiDocument } from '../../api/operations/openapi';
import { loadConfig, projectRoot } from '../../config/config';
import { answerChecker } from '../support/openapi-check';
import { docSection } from '../../scripts/lib/doc-section';
import { renderPrepareReference, renderRecordReference } from '../../scripts/lib/record-reference';
import { executionRecordSchema } from '../../api/executions/contract';
import { SETTINGS } from '../../config/settings';
import { HOLD_REASONS, LEDGER_ONLY_REASONS, REFUND_STATES } from '../../contracts/refunds';
import { ROUTES } from '../../contracts/storage-node-protocol';
import { LOCAL_CHAIN_PORT } from '../../scripts/lib/anvil';
import { LOCAL_NODE_PORTS } from '../../scripts/lib/storage-nodes';
import { readDevServerSettings } from '../../scripts/lib/temporal-dev-server';
import { STORAGE_NODE_FLAGS } from '../../storage-node/config';

type Operation = { responses: Record<string, { content?: Record<string, { schema: object }> }> };
type Doc = { paths: Record<string, Record<string, Operation>>; components: object };

const doc = buildOpenApiDocument(loadConfig({})) as Doc;
const read = (file: string) => readFileSync(path.join(projectRoot, file), 'utf8');
/** The API reference: docs/api.md (the index) and the pages it links. */
const API_PAGES = ['docs/api.md', 'docs/api-executions.md', 'docs/api-whitelists.md', 'docs/api-refunds.md', 'docs/api-temporal-names.md'];

/** The OpenAPI path template a concrete path (or a route as the docs write it) stands for, or undefined. */
export function templateOf(concrete: string): string | undefined {
  const clean = concrete.replace(/[?#].*$/, '').replace(/\/$/, '') || '/';
  const segments = clean.split('/');
  // Fixed segments beat parameters: /api/v1/executions/{wallet}/submit before /{wallet}/{executionId}.
  const candidates = Object.keys(doc.paths)
    .filter((t) => {
      const ts = t.replace(/\/$/, '').split('/');
      // A placeholder in the page ({wallet}) stands only for a placeholder of the document.
      return (
        ts.length === segments.length && ts.every((s, i) => s === segments[i] || (/^\{.+\}$/.test(s) && !/^(submit)$/.test(segments[i]!)))
      );
    })
    .sort((a, b) => (a.match(/\{/g)?.length ?? 0) - (b.match(/\{/g)?.length ?? 0));
  return candidates[0];
}

/** The document's template and operation for a method and a path as a page writes it; undefined when it has none. */
function routeOf(method: string, concrete: string) {
  const template = templateOf(concrete);
  const operation = template && doc.paths[template]?.[method.toLowerCase()];
  return operation ? { template: template!, operation } : undefined;
}

/** Each shell block's curl calls with the JSON answer the line(s) after it show as a `# {…}` comment. */
export function curlExamples(markdown: string): Array<{ method: string; path: string; body: string; line: number }> {
  const out: Array<{ method: string; path: string; body: string; line: number }> = [];
  const lines = markdown.split('\n');
  let inShell = false;
  let last: { method: string; path: string; line: number } | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (/^```/.test(line)) {
      inShell = !inShell && /^```sh/.test(line);
      last = undefined;
      continue;
    }
    if (!inShell) continue;
    const curl = /\bcurl\b/.test(line) ? /(?:localhost:\d+|\$API|\$\{API\}|127\.0\.0\.1:\d+)(\/[^\s"']*)/.exec(line) : null;
    if (curl) {
      last = { method: /-X\s+(POST|PUT|DELETE|PATCH)/.exec(line)?.[1] ?? 'GET', path: curl[1]!, line: i + 1 };
      continue;
    }
    if (last && /^#\s*[[{]/.test(line)) {
      let body = line.replace(/^#\s*/, '');
      while (i + 1 < lines.length && /^#\s{2,}/.test(lines[i + 1]!)) body += lines[++i]!.replace(/^#\s*/, '');
      out.push({ ...last, body });
      last = undefined;
    } else if (line.trim() !== '' && !/\\$/.test(lines[i - 1] ?? '')) last = undefined;
  }
  return out;
}

/** The routes a page's tables name (`| \`METHOD /path…\` …|`) and the statuses their row gives. */
export function tableStatuses(markdown: string): Array<{ method: string; path: string; statuses: number[]; line: number }> {
  const out: Array<{ method: string; path: string; statuses: number[]; line: number }> = [];
  markdown.split('\n').forEach((line, i) => {
    const m = /^\| `(GET|POST|PUT|DELETE|PATCH) (\/[^`\s?]*)[^`]*`[^|]*\|([^|]*)\|(.*)\|\s*$/.exec(line);
    if (!m) return;
    const answers = m[4]!;
    // A status is a three-digit number starting 1-5 that is not part of a larger number, a size or a time.
    const statuses = [...answers.matchAll(/(?<!\d|\d[.,]|[–-])\b([1-5]\d\d)\b(?!\d|[.,]\d|\s?(?:ms|s\b|KiB|MB|bytes))/g)].map((s) =>
      Number(s[1]),
    );
    out.push({ method: m[1]!, path: m[2]!, statuses: [...new Set(statuses)], line: i + 1 });
  });
  return out;
}

describe('docs: the examples and statuses the pages give are the contract (the OpenAPI document)', () => {
  const check = answerChecker(doc);

  for (const page of [...API_PAGES, 'docs/integrate.md', 'README.md']) {
    it(`when ${page} shows a JSON answer after a curl call, then it is valid JSON and the OpenAPI schema of that route's success answer accepts it`, () => {
      const examples = curlExamples(read(page));
      const wrong: string[] = [];
      for (const e of examples) {
        const route = routeOf(e.method, e.path);
        if (!route) {
          wrong.push(`${page}:${e.line}: ${e.method} ${e.path} is no route of the document`);
          continue;
        }
        const { template, operation } = route;
        let body: unknown;
        try {
          body = JSON.parse(e.body);
        } catch (err) {
          wrong.push(`${page}:${e.line}: not JSON (${(err as Error).message}): ${e.body}`);
          continue;
        }
        const success = Object.keys(operation.responses).filter(
          (s) => /^2\d\d$/.test(s) && operation.responses[s]!.content?.['application/json'],
        );
        const errors = success.map((s) => {
          try {
            check(template, e.method, Number(s), body);
            return undefined;
          } catch (err) {
            return (err as Error).message;
          }
        });
        if (!errors.includes(undefined)) wrong.push(`${page}:${e.line}: ${errors.join(' / ')}`);
      }
      assert.deepEqual(wrong, []);
      if (page === 'docs/api.md') {
        const all = API_PAGES.flatMap((p) => curlExamples(read(p))).length;
        assert.ok(all >= 5, `the scan found the API pages' examples (${all})`);
      }
    });
  }

  for (const page of [
    ...API_PAGES,
    'docs/integrate.md',
    'docs/operations.md',
    'docs/configuration.md',
    'docs/production.md',
    'docs/runbooks.md',
    'docs/backup.md',
    'docs/troubleshooting.md',
    'README.md',
  ]) {
    it(`when ${page} gives the statuses of a route in a table row, then the OpenAPI document lists each of them for that route`, () => {
      const rows = tableStatuses(read(page));
      const wrong: string[] = [];
      for (const row of rows) {
        const route = routeOf(row.method, row.path);
        if (!route) {
          wrong.push(`${page}:${row.line}: ${row.method} ${row.path} is no route of the document`);
          continue;
        }
        const { template, operation } = route;
        for (const s of row.statuses)
          if (!(String(s) in operation.responses)) wrong.push(`${page}:${row.line}: ${row.method} ${template} ${s}`);
      }
      assert.deepEqual(wrong, []);
      if (page === 'docs/api.md') {
        const all = API_PAGES.flatMap((p) => tableStatuses(read(p))).length;
        assert.ok(all >= 10, `the scan found the API pages' route rows (${all})`);
      }
    });
  }
});

/** The repository paths a page names in backticks (`api/app.ts`, `scripts/lib/`, `test/…/x.test.ts`). */
export function namedPaths(markdown: string): string[] {
  const roots =
    'api|activities|bench|client|config|contracts|db|docs|domain|lib|scripts|storage-node|test|tokens|worker|workflows|temporal-cluster|\\.ci';
  const found = new Set<string>();
  for (const m of markdown.matchAll(new RegExp(`\`((?:${roots})/[A-Za-z0-9._/-]*)\``, 'g'))) {
    const p = m[1]!;
    // A pattern or a placeholder names no one file.
    if (/[*<>{}…]/.test(p) || /\.\.\.$/.test(p)) continue;
    found.add(p);
  }
  return [...found];
}

describe('docs: every path a page names exists', () => {
  const pages = [
    'README.md',
    ...readdirSync(path.join(projectRoot, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`),
    ...readdirSync(path.join(projectRoot, 'docs', 'decisions'))
      .filter((f) => /^Status: accepted/m.test(read(`docs/decisions/${f}`)))
      .map((f) => `docs/decisions/${f}`),
  ];

  it('when a page (or a decision record marked accepted) names a file or folder of the repository in backticks, then it exists', () => {
    const missing: string[] = [];
    let seen = 0;
    for (const page of pages)
      for (const p of namedPaths(read(page))) {
        seen++;
        // Compiled paths (dist/…) are built from their sources; named here by source.
        if (!existsSync(path.join(projectRoot, p))) missing.push(`${page}: ${p}`);
      }
    assert.ok(seen > 30, `the scan found the named paths (${seen})`);
    assert.deepEqual(missing, []);
  });
});

describe('docs: the references a page repeats from the code are rendered from it', () => {
  it("when docs/api-executions.md lists the execution record's fields and prepare's, then each list is the one rendered from the contract (npm run docs:settings)", () => {
    assert.equal(docSection(read('docs/api-executions.md'), 'record-fields'), renderRecordReference().trim());
    assert.equal(docSection(read('docs/api-executions.md'), 'prepare-fields'), renderPrepareReference().trim());
  });
});

/** The text of a page's section: from its heading to the next heading of the same or a higher level. */
function section(markdown: string, heading: string): string {
  const lines = markdown.split('\n');
  const start = lines.findIndex((l) => /^#+ /.test(l) && l.replace(/^#+ /, '').startsWith(heading));
  assert.ok(start >= 0, `no section "${heading}"`);
  const level = /^#+/.exec(lines[start]!)![0].length;
  const end = lines.findIndex((l, i) => i > start && /^#+ /.test(l) && /^#+/.exec(l)![0].length <= level);
  return lines.slice(start, end < 0 ? undefined : end).join('\n');
}

/** Every TypeScript source of the service's own folders, as one text: where a named log message must be. */
function sources(): string {
  const dirs = ['api', 'activities', 'worker', 'storage-node', 'lib', 'db', 'scripts', 'workflows', 'domain', 'config'];
  return dirs
    .flatMap((dir) =>
      readdirSync(path.join(projectRoot, dir), { recursive: true, encoding: 'utf8' })
        .filter((f) => f.endsWith('.ts'))
        .map((f) => read(path.join(dir, f))),
    )
    .join('\n');
}

describe('docs: the lists a page repeats from the code are the code', () => {
  it('when troubleshooting.md lists the ports npm start uses, then they are exactly the ports of its parts', () => {
    const settings = readDevServerSettings();
    const expected = [
      SETTINGS.PORT.default,
      settings.port,
      settings.uiPort,
      ...LOCAL_NODE_PORTS,
      LOCAL_CHAIN_PORT,
      SETTINGS.OPERATOR_PORT.default,
      SETTINGS.WORKER_METRICS_PORT.default,
    ].sort();
    const paragraph = read('docs/troubleshooting.md')
      .split('\n\n')
      .find((p) => p.startsWith('**A port is in use.**'))!;
    const named = [...paragraph.matchAll(/\b(\d{4,5})(?:–(\d{4,5}))?\b/g)].flatMap((m) => {
      const [from, to] = [Number(m[1]), Number(m[2] ?? m[1])];
      return Array.from({ length: to - from + 1 }, (_, i) => from + i);
    });
    assert.deepEqual([...new Set(named)].sort(), expected);
  });

  it('when docs/api-whitelists.md "Storage nodes" describes the node, then it names every flag the node takes and every route it serves', () => {
    const text = section(read('docs/api-whitelists.md'), 'Storage nodes');
    const missing = [
      ...Object.keys(STORAGE_NODE_FLAGS)
        .map((flag) => `--${flag}`)
        .filter((flag) => !text.includes(`\`${flag}`)),
      ...[ROUTES.apply, ROUTES.audit, ROUTES.health, `${ROUTES.listPrefix}{kind}`, `${ROUTES.listPrefix}{kind}/{entry}`].filter(
        (route) => !text.includes(` ${route}\``),
      ),
    ];
    assert.deepEqual(missing, []);
  });

  it('when docs/api-refunds.md "Refunds" lists the refusal reasons of a ledger row, then they are the record\'s reasons and the ledger\'s own, no more', () => {
    const text = section(read('docs/api-refunds.md'), 'Refunds');
    const listed = /`reason` \(([^)]*)\)/.exec(text)?.[1] ?? '';
    const reasons = [...listed.matchAll(/`([a-z-]+)`/g)].map((m) => m[1]).sort();
    const record = executionRecordSchema.properties.refusedDeposits.items.properties.reason.enum;
    assert.deepEqual(reasons, [...record, ...LEDGER_ONLY_REASONS].sort());
  });

  it('when docs/api-refunds.md "Refunds" lists the states of a ledger row and the reasons a row is held, then they are the ledger\'s, each once, in its order', () => {
    const text = section(read('docs/api-refunds.md'), 'Refunds');
    const listed = (pattern: RegExp) => [...text.matchAll(pattern)].map((m) => m[1]);
    assert.deepEqual(listed(/^- `([a-z-]+)`: /gm), [...REFUND_STATES]);
    assert.deepEqual(listed(/^ {2}- `([a-z-]+)`: /gm), [...HOLD_REASONS]);
  });

  it('when docs/runbooks.md "A refund is held" lists the hold reasons, then it has one row per reason the code has, in its order', () => {
    const table = read('docs/runbooks.md').split('<!-- hold-reasons:start -->')[1]?.split('<!-- hold-reasons:end -->')[0];
    assert.ok(table, 'no hold-reasons table');
    assert.deepEqual(
      [...table.matchAll(/^\| `([a-z-]+)` \|/gm)].map((m) => m[1]),
      [...HOLD_REASONS],
    );
  });

  it('when a page shows `npm run X -- sub --flag`, then package.json has the script X, and its source knows each subcommand and --flag', () => {
    const scripts = JSON.parse(read('package.json')).scripts as Record<string, string>;
    const missing: string[] = [];
    for (const page of [
      'README.md',
      ...readdirSync(path.join(projectRoot, 'docs'))
        .filter((f) => f.endsWith('.md'))
        .map((f) => `docs/${f}`),
    ])
      for (const [, name, args = ''] of read(page).matchAll(/npm run (?:--silent )?([a-z][a-z0-9:-]*)(?: -- ([^`\n]*))?/g)) {
        if (!(name! in scripts)) {
          missing.push(`${page}: npm run ${name}`);
          continue;
        }
        const entry = /node (?:dist\/)?(scripts\/[a-z-]+)\.js/.exec(scripts[name!]!);
        if (!entry) continue;
        const source = read(`${entry[1]}.ts`);
        const subcommand = /^([a-z]+)\b/.exec(args)?.[1];
        if (subcommand && !new RegExp(`--\\s+${subcommand}\\b|'${subcommand}'`).test(source))
          missing.push(`${page}: npm run ${name} has no subcommand ${subcommand}`);
        for (const flag of args.matchAll(/--([a-z][a-z-]*)/g))
          if (!source.includes(`--${flag[1]}`) && !source.includes(`'${flag[1]}'`))
            missing.push(`${page}: npm run ${name} has no --${flag[1]}`);
      }
    assert.deepEqual(missing, []);
  });

  it('when a page names a log line (`…` line, log line `…`), then the code writes that message', () => {
    const code = sources();
    const missing: string[] = [];
    let seen = 0;
    for (const page of [
      'README.md',
      ...readdirSync(path.join(projectRoot, 'docs'))
        .filter((f) => f.endsWith('.md'))
        .map((f) => `docs/${f}`),
    ])
      for (const m of read(page).matchAll(/log line `([^`]+)`|`([^`]+)` (?:log )?line\b/g)) {
        const message = (m[1] ?? m[2])!.replace(/\s+/g, ' ');
        if (/^whsec_/.test(message)) continue; // a secret's line in the tokens file, not a log message
        seen++;
        if (!code.includes(`'${message}`) && !code.includes(`"${message}`) && !code.includes(`\`${message}`))
          missing.push(`${page}: ${message}`);
      }
    assert.ok(seen >= 5, `the scan found the named log lines (${seen})`);
    assert.deepEqual(missing, []);
  });
});
