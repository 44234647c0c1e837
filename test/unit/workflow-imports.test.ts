import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { projectRoot } from '../../config/config';
import { checkWorkflowImports, findPatchCalls, unrecordedPatchCalls, valueImports } from '../../scripts/lib/workflow-imports';
import { SHARED_WORKFLOW_MODULES } from '../../worker/workflow-bundle';

/** Packages a shared module may reach: the hash library, and @temporalio/common (shared by the SDK already). */
const SHARED_PACKAGES = /^(@noble\/hashes\/[\w.]+|@temporalio\/common)$/;

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

  it('when the modules that every workflow shares (preloaded) are followed through their value imports, then each stays in domain/, reaches only the hash library or @temporalio/common, and reads no clock or randomness', () => {
    // A shared module is evaluated once, before any workflow exists, and its exports are shared by
    // every workflow of the thread: state, a clock or randomness there would leak between workflows.
    const problems: string[] = [];
    const seen = new Set<string>();
    const queue = SHARED_WORKFLOW_MODULES.map((m) =>
      path.join(projectRoot, path.relative(path.join(projectRoot, 'dist'), m)).replace(/\.js$/, '.ts'),
    );
    assert.ok(queue.length > 0);
    while (queue.length > 0) {
      const file = queue.shift()!;
      if (seen.has(file)) continue;
      seen.add(file);
      const name = path.relative(projectRoot, file);
      if (!name.startsWith(`domain${path.sep}`) || !existsSync(file)) problems.push(`${name}: not a module of domain/`);
      else {
        const source = readFileSync(file, 'utf8');
        if (/\bDate\b|Math\.random|^(let|var)\s/m.test(source.replace(/^\s*(\/\/|\*|\/\*\*).*$/gm, '')))
          problems.push(`${name}: uses Date or Math.random, or has a module-level let/var`);
        for (const spec of valueImports(source)) {
          if (spec.startsWith('.')) queue.push(path.resolve(path.dirname(file), `${spec}.ts`));
          else if (!SHARED_PACKAGES.test(spec)) problems.push(`${name}: imports ${spec}`);
        }
      }
    }
    assert.deepEqual(problems, []);
  });
});
