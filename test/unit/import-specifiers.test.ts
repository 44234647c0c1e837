import assert from 'node:assert/strict';
import { importedModules } from '../../scripts/lib/import-specifiers';

describe('scripts/lib/import-specifiers importedModules', () => {
  it('when a source imports in every form, then each module is found once, with whether the build erases it', () => {
    const source = [
      "import a from 'default-value';",
      "import { type B, c } from 'mixed';",
      "import { type D } from 'inline-type';",
      "import type { E } from 'type-only';",
      'import * as f from "double-quoted";',
      "import 'side-effect';",
      "export { g } from './re-export';",
      "export type { H } from './type-re-export';",
      "import i = require('import-equals');",
      "const j = require('./required');",
      "const k = require.resolve('./resolved');",
      "const l = import('./dynamic');",
    ].join('\n');
    assert.deepEqual(importedModules(source), [
      { specifier: 'default-value', typeOnly: false },
      { specifier: 'mixed', typeOnly: false },
      { specifier: 'inline-type', typeOnly: true },
      { specifier: 'type-only', typeOnly: true },
      { specifier: 'double-quoted', typeOnly: false },
      { specifier: 'side-effect', typeOnly: false },
      { specifier: './re-export', typeOnly: false },
      { specifier: './type-re-export', typeOnly: true },
      { specifier: 'import-equals', typeOnly: false },
      { specifier: './required', typeOnly: false },
      { specifier: './resolved', typeOnly: false },
      { specifier: './dynamic', typeOnly: false },
    ]);
  });

  it('when an import is only written in a comment, a string or a type position, then it is not found', () => {
    const source = [
      "// import x from 'in-a-line-comment';",
      "/* require('in-a-block-comment') */",
      'const s = "import y from \'in-a-string\'";',
      "type T = typeof import('in-a-type');",
      "const r = notRequire('not-a-require');",
    ].join('\n');
    assert.deepEqual(importedModules(source), []);
  });
});
