import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { projectRoot } from '../../config/config';
import { checkWorkflowImports, findPatchCalls, unrecordedPatchCalls, valueImports } from '../../scripts/lib/workflow-imports';
import { SHARED_WORKFLOW_MODULES } from '../../worker/workflow-bundle';

/** Packages a shared module may reach: the hash library, and the SDK's workflow API and @temporalio/common (stateless at load: they reach the running workflow when called). */
const SHARED_PACKAGES = /^(@noble\/hashes\/[\w.]+|@temporalio\/common|@temporalio\/workflow)$/;

/** The TypeScript file of a module path without extension (a file, or a folder's index). */
const resolveModule = (base: string) => (existsSync(`${base}.ts`) ? `${base}.ts` : path.join(base, 'index.ts'));

describe('unit: workflow imports stay workflow-safe (npm run lint)', () => {
  it("when the project's workflows/ is checked, then no value import reaches a Node built-in or an I/O folder", () => {
    assert.deepEqual(checkWorkflowImports(projectRoot), []);
  });

  it("when the project's workflows/ is checked, then it calls no patched() or deprecatePatch() (1.0: one path per workflow)", () => {
    assert.deepEqual(findPatchCalls(projectRoot), []);
  });

  it('when a workflow calls patched() or deprecatePatch(), then each call is reported with its line and id; a comment naming them is not', () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'wf-patches-'));
    try {
      mkdirSync(path.join(root, 'workflows'));
      writeFileSync(
        path.join(root, 'workflows', 'a.ts'),
        "// patched('old') was here\n/* deprecatePatch('x') */\nif (patched('new')) run();\n  deprecatePatch ('gone');\nif (patched(id)) run();\n",
      );
      assert.deepEqual(findPatchCalls(root), [
        { where: 'workflows/a.ts:3', id: 'new' },
        { where: 'workflows/a.ts:4', id: 'gone' },
        { where: 'workflows/a.ts:5' },
      ]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('when a patch id is named in a decision record that says when it will be removed, then lint lets it pass; otherwise (no record, no removal, no literal id) it fails', () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'wf-patch-records-'));
    try {
      mkdirSync(path.join(root, 'workflows'));
      mkdirSync(path.join(root, 'docs', 'decisions'), { recursive: true });
      writeFileSync(
        path.join(root, 'workflows', 'a.ts'),
        "if (patched('kept')) run();\nif (patched('vague')) run();\nif (patched('unknown')) run();\nif (patched(id)) run();\n",
      );
      writeFileSync(
        path.join(root, 'docs', 'decisions', '0100-a-patch.md'),
        '# 0100\nThe patch `kept` becomes deprecatePatch once no run of the old version is open; removed one release later.\n',
      );
      writeFileSync(path.join(root, 'docs', 'decisions', '0101-vague.md'), '# 0101\nThe patch `vague` stays (deprecatePatch some day).\n');
      assert.deepEqual(unrecordedPatchCalls(root), [
        'workflows/a.ts:2 (vague)',
        'workflows/a.ts:3 (unknown)',
        'workflows/a.ts:4 (no literal patch id)',
      ]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('when a workflow imports node:fs, activities/ by value, or a domain module that imports node:crypto, then each is reported', () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'wf-imports-'));
    try {
      for (const dir of ['workflows', 'domain', 'activities']) mkdirSync(path.join(root, dir));
      writeFileSync(
        path.join(root, 'workflows', 'a.ts'),
        "import { readFileSync } from 'node:fs';\nimport { createActivities } from '../activities';\nimport type { X } from '../activities';\nimport { pure } from '../domain/pure';\n",
      );
      writeFileSync(path.join(root, 'activities', 'index.ts'), 'export const createActivities = 1;\n');
      writeFileSync(path.join(root, 'domain', 'pure.ts'), "import {\n  createHash,\n} from 'crypto';\nexport const pure = 1;\n");
      assert.deepEqual(checkWorkflowImports(root).sort(), [
        'domain/pure.ts: imports the Node built-in crypto',
        'workflows/a.ts: imports ../activities (activities/ is not workflow-safe; use `import type`)',
        'workflows/a.ts: imports the Node built-in node:fs',
      ]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('when a domain module that no workflow imports reaches a Node built-in, then it is reported (domain/ is sandbox-safe as a folder)', () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'wf-imports-'));
    try {
      for (const dir of ['workflows', 'domain']) mkdirSync(path.join(root, dir));
      writeFileSync(path.join(root, 'workflows', 'a.ts'), 'export const a = 1;\n');
      writeFileSync(path.join(root, 'domain', 'unused.ts'), "import { verify } from 'node:crypto';\nexport const v = verify;\n");
      assert.deepEqual(checkWorkflowImports(root), ['domain/unused.ts: imports the Node built-in node:crypto']);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('when a source mixes value, type-only and re-export imports, then valueImports lists only the value ones', () => {
    assert.deepEqual(
      valueImports(
        "import a from 'x';\nimport type { B } from 'y';\nexport { c } from './z';\nexport type { D } from './w';\nimport 'side';",
      ),
      ['x', './z', 'side'],
    );
  });

  it('when the modules that every workflow shares (preloaded) are followed through their value imports, then each is a module of workflows/, contracts/ or domain/ other than the tracing interceptor, reaches only @temporalio/workflow, @temporalio/common or the hash library, holds no state at module level, and only workflows/ reads a clock', () => {
    // A shared module is evaluated once, before any workflow exists, and its exports are shared by
    // every workflow of the thread: state there would leak between workflows. Workflow functions
    // read the clock through the SDK's Date, which answers the running workflow's time when called
    // (and throws at load, outside any workflow); contracts/ and domain/ never read it.
    const problems: string[] = [];
    const seen = new Set<string>();
    const queue = SHARED_WORKFLOW_MODULES.map((m) => {
      const file = path.join(projectRoot, path.relative(path.join(projectRoot, 'dist'), m)).replace(/\.js$/, '.ts');
      return existsSync(file) ? file : file.replace(/\.ts$/, `${path.sep}index.ts`);
    });
    assert.ok(queue.length > 0);
    while (queue.length > 0) {
      const file = queue.shift()!;
      if (seen.has(file)) continue;
      seen.add(file);
      const name = path.relative(projectRoot, file);
      const folder = name.split(path.sep)[0];
      if (!['workflows', 'contracts', 'domain'].includes(folder) || !existsSync(file))
        problems.push(`${name}: not a module of workflows/, contracts/ or domain/`);
      else if (name === path.join('workflows', 'tracing.ts'))
        problems.push(`${name}: the tracing interceptor keeps per-workflow state; it must not be shared`);
      else {
        const source = readFileSync(file, 'utf8').replace(/^\s*(\/\/|\*|\/\*\*).*$/gm, '');
        if (/^(let|var)\s|^(export\s+)?const\s+\w+\s*(:[^=]+)?=\s*new\s+(Map|Set|WeakMap|WeakSet|Array)\b/m.test(source))
          problems.push(`${name}: holds state at module level (a let, a var, or a collection)`);
        if (folder !== 'workflows' && /\bDate\b|Math\.random/.test(source)) problems.push(`${name}: uses Date or Math.random`);
        for (const spec of valueImports(source)) {
          if (spec.startsWith('.')) queue.push(resolveModule(path.resolve(path.dirname(file), spec)));
          else if (!SHARED_PACKAGES.test(spec)) problems.push(`${name}: imports ${spec}`);
        }
      }
    }
    assert.ok(seen.has(path.join(projectRoot, 'workflows', 'execution.ts')));
    assert.deepEqual(problems, []);
  });
});
