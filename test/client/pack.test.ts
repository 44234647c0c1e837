import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { projectRoot } from '../../config/config';
import { getStack, type Stack } from '../support/stack';

import { childEnv } from '../../config/child-env';

const run = promisify(execFile);

/** What an integrator's program does with the installed package: the whole path of one execution. */
const SCRIPT = `
import { randomBytes, randomUUID } from 'node:crypto';
import { IntentClient, nacl25519Signer, walletOf } from '@intent-service/client';

const [baseUrl, token] = process.argv.slice(2);
const client = new IntentClient({ baseUrl, token });
const signer = nacl25519Signer(new Uint8Array(randomBytes(32)));
const wallet = walletOf(signer);
const executionId = 'pack-' + randomUUID();
const intent = { swap: 'USDC->ETH', amount: '10' };
console.log('prepare', (await client.prepare(wallet, { executionId, intent, ttlSeconds: 600 })).status);
console.log('deposit', (await client.deposit(wallet, executionId, { txHash: '0x' + randomBytes(16).toString('hex') })).status);
console.log('submit', (await client.submit(signer, { executionId, intent, domain: 'localhost' })).status);
for await (const event of client.watch(wallet, executionId)) console.log('watch', event.status);
`;

/**
 * The lockfile of a project that depends on the tarball only, its dependencies pinned to the
 * versions and integrities of the repository's lockfile: `npm ci --offline` then takes them from
 * the npm cache that installing the repository filled, without the network.
 */
function lockfileFor(tarball: string): object {
  const root = JSON.parse(readFileSync(path.join(projectRoot, 'package-lock.json'), 'utf8'));
  const client = JSON.parse(readFileSync(path.join(projectRoot, 'client', 'package.json'), 'utf8'));
  const integrity = `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`;
  const spec = `file:${tarball}`;
  const packages: Record<string, object> = {
    '': { name: 'sdk-user', dependencies: { '@intent-service/client': spec } },
    'node_modules/@intent-service/client': { version: client.version, resolved: spec, integrity, dependencies: client.dependencies },
  };
  const pending = Object.keys(client.dependencies);
  while (pending.length > 0) {
    const name = pending.pop()!;
    const entry = root.packages[`node_modules/${name}`];
    assert.ok(entry, `${name} is not in package-lock.json`);
    const url = `https://registry.npmjs.org/${name}/-/${name.split('/').pop()}-${entry.version}.tgz`;
    packages[`node_modules/${name}`] = {
      version: entry.version,
      resolved: url,
      integrity: entry.integrity,
      dependencies: entry.dependencies,
    };
    pending.push(...Object.keys(entry.dependencies ?? {}));
  }
  return { name: 'sdk-user', lockfileVersion: 3, requires: true, packages };
}

describe('client: the packed SDK installs in an empty folder and runs against the stack', function () {
  this.timeout(120_000);
  let stack: Stack;
  let dir: string;
  before(async () => {
    stack = await getStack();
    dir = mkdtempSync(path.join(tmpdir(), 'sdk-pack-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('when client/ is packed with npm pack and the tarball installed offline into an empty project, then its script prepares, deposits, submits and watches to SIGNING', async () => {
    const packed = await run('npm', ['pack', '--json', '--pack-destination', dir], { cwd: path.join(projectRoot, 'client') });
    const [{ filename, files }] = JSON.parse(packed.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
    assert.ok(
      files.some((f) => f.path === 'dist/index.js') &&
        files.every((f) => f.path.startsWith('dist/') || ['package.json', 'README.md'].includes(f.path)),
    );
    const app = path.join(dir, 'app');
    mkdirSync(app);
    const tarball = path.join(dir, filename);
    writeFileSync(
      path.join(app, 'package.json'),
      JSON.stringify({ name: 'sdk-user', private: true, type: 'module', dependencies: { '@intent-service/client': `file:${tarball}` } }),
    );
    writeFileSync(path.join(app, 'package-lock.json'), JSON.stringify(lockfileFor(tarball), null, 2));
    writeFileSync(path.join(app, 'main.js'), SCRIPT);
    await run('npm', ['ci', '--offline', '--no-audit', '--no-fund'], { cwd: app });

    const { stdout } = await run(process.execPath, ['main.js', stack.api.url, stack.tokens.all], { cwd: app, env: childEnv() });
    const lines = stdout.trim().split('\n');
    assert.deepEqual(lines.slice(0, 3), ['prepare PREPARED', 'deposit OPERATION_PENDING', 'submit SIGNING'], stdout);
    assert.equal(lines.at(-1), 'watch SIGNING', stdout);
  });
});
