import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { unflooredFolders, upwardImports } from '../../scripts/lib/floors';
import { projectRoot } from '../../config/config';

describe('unit: the floors of the house (scripts/lib/floors.ts)', () => {
  const project = (files: Record<string, string>): string => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'floors-'));
    for (const [file, text] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
      fs.writeFileSync(path.join(root, file), text);
    }
    return root;
  };

  it('when a module imports from a higher floor or a neighbour it may not use, then each such import is named; downward ones are not', () => {
    const root = project({
      'domain/state.ts': "import { schema } from '../api/schemas';\nexport const x = 1;\n",
      'contracts/temporal.ts': "import type { State } from '../domain/state';\n",
      'workflows/flow.ts': "import type { Activities } from '../activities/index';\nimport { x } from '../contracts/temporal';\n",
      'activities/index.ts': "export * from '../contracts/temporal';\n",
      'api/schemas.ts': "export const schema = require('../domain/state');\n",
      'test/a.test.ts': "import '../api/schemas';\n",
    });
    assert.deepEqual(upwardImports(root), [
      { file: path.join('domain', 'state.ts'), target: path.join('api', 'schemas') },
      { file: path.join('workflows', 'flow.ts'), target: path.join('activities', 'index') },
    ]);
  });

  it('when a module inside api/ imports from a higher or neighbouring part of api/, then it is named; imports down the api floors are not', () => {
    const root = project({
      'api/http/errors.ts': "import { routes } from '../executions/routes';\n",
      'api/executions/routes.ts':
        "import { x } from '../http/errors';\nimport { y } from '../whitelists/service';\nimport type { D } from '../deps';\n",
      'api/whitelists/service.ts': "import { call } from '../temporal/call';\n",
      'api/operations/openapi.ts': "import * as c from '../executions/routes';\n",
      'api/deps.ts': "import type { L } from './http/errors';\n",
      'api/app.ts': "import { doc } from './operations/openapi';\n",
      'api/gadgets/g.ts': "import { x } from '../http/errors';\n",
    });
    assert.deepEqual(upwardImports(root), [
      { file: path.join('api', 'executions', 'routes.ts'), target: path.join('api', 'whitelists', 'service') },
      { file: path.join('api', 'gadgets', 'g.ts'), target: path.join('api', 'http', 'errors') },
      { file: path.join('api', 'http', 'errors.ts'), target: path.join('api', 'executions', 'routes') },
    ]);
  });

  it('when a folder of TypeScript has no floor, then it is named', () => {
    const root = project({ 'domain/a.ts': '', 'gadgets/b.ts': '', 'notes/readme.md': '' });
    assert.deepEqual(unflooredFolders(root), ['gadgets']);
  });

  it('when the project itself is checked, then every folder has a floor and no import climbs', () => {
    assert.deepEqual(unflooredFolders(projectRoot), []);
    assert.deepEqual(upwardImports(projectRoot), []);
  });
});
