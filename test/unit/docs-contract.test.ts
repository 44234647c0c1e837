import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { buildOpenApiDocument } from '../../api/operations/openapi';
import { loadConfig, projectRoot } from '../../config/config';
import { answerChecker } from '../support/openapi-check';
import { docSection } from '../../scripts/lib/doc-section';
import { renderRecordReference } from '../../scripts/lib/record-reference';

type Operation = { responses: Record<string, { content?: Record<string, { schema: object }> }> };
type Doc = { paths: Record<string, Record<string, Operation>>; components: object };

const doc = buildOpenApiDocument(loadConfig({})) as Doc;
const read = (file: string) => readFileSync(path.join(projectRoot, file), 'utf8');

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

  for (const page of ['docs/api.md', 'docs/integrate.md', 'README.md']) {
    it(`when ${page} shows a JSON answer after a curl call, then it is valid JSON and the OpenAPI schema of that route's success answer accepts it`, () => {
      const examples = curlExamples(read(page));
      const wrong: string[] = [];
      for (const e of examples) {
        const template = templateOf(e.path);
        const operation = template && doc.paths[template]?.[e.method.toLowerCase()];
        if (!operation) {
          wrong.push(`${page}:${e.line}: ${e.method} ${e.path} is no route of the document`);
          continue;
        }
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
      if (page === 'docs/api.md') assert.ok(examples.length >= 5, `the scan found api.md's examples (${examples.length})`);
    });
  }

  for (const page of ['docs/api.md', 'docs/integrate.md', 'docs/operations.md', 'docs/troubleshooting.md', 'README.md']) {
    it(`when ${page} gives the statuses of a route in a table row, then the OpenAPI document lists each of them for that route`, () => {
      const rows = tableStatuses(read(page));
      const wrong: string[] = [];
      for (const row of rows) {
        const template = templateOf(row.path);
        const operation = template && doc.paths[template]?.[row.method.toLowerCase()];
        if (!operation) {
          wrong.push(`${page}:${row.line}: ${row.method} ${row.path} is no route of the document`);
          continue;
        }
        for (const s of row.statuses)
          if (!(String(s) in operation.responses)) wrong.push(`${page}:${row.line}: ${row.method} ${template} ${s}`);
      }
      assert.deepEqual(wrong, []);
      if (page === 'docs/api.md') assert.ok(rows.length >= 10, `the scan found api.md's route rows (${rows.length})`);
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
  it("when docs/api.md lists the execution record's fields, then the list is the one rendered from the contract (npm run docs:settings)", () => {
    assert.equal(docSection(read('docs/api.md'), 'record-fields'), renderRecordReference().trim());
  });
});
