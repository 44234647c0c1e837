import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { firstUnenterableDir } from '../../scripts/lib/cluster/postgres';

// npm run cluster as root runs PostgreSQL as the postgres user: a clone under a folder only root
// may enter (a mktemp -d folder, /root) made initdb fail with "Permission denied" after the build.
describe('unit: can the postgres user reach the cluster data folder (scripts/lib/cluster/postgres.ts)', () => {
  const other = { uid: 54_321, gid: 54_321 };
  let root: string;
  before(() => {
    root = mkdtempSync(path.join(os.tmpdir(), 'pg-access-'));
    chmodSync(root, 0o755);
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  it('when a folder on the way is closed to others (0700), then it is the one named, whether the data folder exists yet or not', () => {
    const closed = path.join(root, 'closed');
    mkdirSync(path.join(closed, 'clone', 'data'), { recursive: true });
    chmodSync(closed, 0o700);
    assert.equal(firstUnenterableDir(path.join(closed, 'clone', 'data', 'cluster', 'pg'), other), closed);
    assert.equal(firstUnenterableDir(path.join(closed, 'clone', 'data'), other), closed);
  });

  it('when every folder on the way lets others through, then nothing is named', () => {
    const open = path.join(root, 'open', 'clone');
    mkdirSync(open, { recursive: true });
    chmodSync(path.join(root, 'open'), 0o711);
    assert.equal(firstUnenterableDir(path.join(open, 'data', 'cluster', 'pg'), other), undefined);
  });

  it("when a folder is closed to others but the user owns it, then the owner's permission decides", () => {
    const own = path.join(root, 'own');
    mkdirSync(own);
    chmodSync(own, 0o700);
    const owner = { uid: process.getuid?.() ?? 0, gid: 99_999 };
    assert.equal(firstUnenterableDir(own, owner), undefined);
    chmodSync(own, 0o600);
    assert.equal(firstUnenterableDir(own, owner), own);
  });
});
