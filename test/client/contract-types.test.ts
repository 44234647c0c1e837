import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { projectRoot } from '../../config/config';

const run = promisify(execFile);

// The SDK's types are generated from the OpenAPI document (client/src/openapi.ts, `npm run -w client
// generate`); the document is pinned to the code by test/unit/openapi-snapshot.test.ts. Together:
// a route's shape cannot change without the SDK's types changing with it.
describe('client: the SDK types are the OpenAPI document', () => {
  it('when the types are generated again from test/fixtures/openapi.json, then they are byte for byte client/src/openapi.ts', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'sdk-types-'));
    try {
      const out = path.join(dir, 'openapi.ts');
      const cli = path.join(projectRoot, 'node_modules', 'openapi-typescript', 'bin', 'cli.js');
      const args = ['test/fixtures/openapi.json', '--empty-objects-unknown', '-o', out];
      await run(process.execPath, [cli, ...args], { cwd: projectRoot });
      assert.equal(
        readFileSync(out, 'utf8'),
        readFileSync(path.join(projectRoot, 'client', 'src', 'openapi.ts'), 'utf8'),
        'the SDK types are stale: run npm run -w client generate',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
