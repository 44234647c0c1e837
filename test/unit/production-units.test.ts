import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { projectRoot } from '../../config/config';
import { SERVICE_PROCESS_ENV, WORKER_NODE_ARGS, WORKER_PROCESS_ENV } from '../../scripts/lib/service-env';
import { docSnippets } from '../support/doc-snippets';

/** The systemd units docs/production.md gives, by file name. */
function units(): Map<string, string> {
  const out = new Map<string, string>();
  for (const block of docSnippets('production.md', 'ini', 'A host, from a fresh machine')) {
    const name = /^# \/etc\/systemd\/system\/([a-z-]+\.service)\n/.exec(block)?.[1];
    if (name) out.set(name, block);
  }
  return out;
}

const line = (unit: string, key: string) =>
  unit
    .split('\n')
    .filter((l) => l.startsWith(`${key}=`))
    .map((l) => l.slice(key.length + 1));

describe('docs/production.md: the systemd units of a host', () => {
  it('when the page is read, then it has the units of the API, the worker and the storage node', () => {
    assert.deepEqual([...units().keys()].sort(), ['intent-api.service', 'intent-storage-node.service', 'intent-worker.service']);
  });

  it('when systemd-analyze verifies each unit, then it finds nothing wrong', function () {
    if (spawnSync('systemd-analyze', ['--version']).status !== 0) {
      console.warn('    systemd-analyze is not installed: the units are not verified');
      this.skip();
    }
    const dir = mkdtempSync(path.join(os.tmpdir(), 'units-'));
    try {
      for (const [name, text] of units()) {
        // The page's node is /usr/bin/node; verify needs an executable there.
        const body = existsSync('/usr/bin/node') ? text : text.replaceAll('/usr/bin/node', process.execPath);
        writeFileSync(path.join(dir, name), body);
        const result = spawnSync('systemd-analyze', ['verify', path.join(dir, name)], { encoding: 'utf8' });
        assert.equal(result.status, 0, `${name}: ${result.stdout}${result.stderr}`);
        assert.equal(result.stderr.trim(), '', `${name}: ${result.stderr}`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('when a unit starts the API or the worker, then it gives node the entry point, flags and environment its npm script gives', () => {
    const scripts = JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')).scripts as Record<string, string>;
    const env = (unit: string) => Object.fromEntries(line(unit, 'Environment').flatMap((l) => l.split(' ').map((kv) => kv.split('='))));
    const api = units().get('intent-api.service')!;
    const worker = units().get('intent-worker.service')!;
    assert.deepEqual(env(api), SERVICE_PROCESS_ENV);
    assert.deepEqual(env(worker), { ...SERVICE_PROCESS_ENV, ...WORKER_PROCESS_ENV });
    assert.deepEqual(line(api, 'ExecStart'), ['/usr/bin/node dist/api/main.js']);
    assert.deepEqual(line(worker, 'ExecStart'), [`/usr/bin/node ${WORKER_NODE_ARGS.join(' ')} dist/worker/main.js`]);
    assert.match(line(units().get('intent-storage-node.service')!, 'ExecStart')[0]!, /^\/usr\/bin\/node dist\/storage-node\/main\.js /);
    // The npm scripts say the same (`npm run api` / `npm run worker`).
    for (const [k, v] of Object.entries(env(api))) assert.ok(scripts.api!.includes(`${k}=\${${k}:-${v}}`), `npm run api sets ${k}`);
    for (const [k, v] of Object.entries(env(worker)))
      assert.ok(scripts.worker!.includes(`${k}=\${${k}:-${v}}`), `npm run worker sets ${k}`);
    assert.ok(scripts.worker!.includes(`node ${WORKER_NODE_ARGS.join(' ')} dist/worker/main.js`));
    assert.ok(scripts.api!.endsWith('node dist/api/main.js') && scripts['storage-node']!.endsWith('node dist/storage-node/main.js'));
  });

  it('when the build step is read, then each of its npm commands is a script or an npm built-in, and the run scripts never build', () => {
    const scripts = JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')).scripts as Record<string, string>;
    const [build] = docSnippets('production.md', 'sh', 'A host, from a fresh machine');
    assert.ok(build?.includes('npm ci') && build.includes('npm run build'), 'the recipe installs and builds');
    for (const name of ['api', 'worker', 'storage-node']) assert.ok(!(`pre${name}` in scripts), `no pre${name} hook: the build is a step`);
  });
});
