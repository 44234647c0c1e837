import assert from 'node:assert/strict';
import { chmodSync, chownSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createToken, revokeToken } from '../../tokens/token-store';

// docs/production.md "Secrets, in order": root issues tokens into a file the service only reads.
describe('tokens file: a rewrite keeps the access the operator gave it', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'token-access-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('when the tokens file does not exist, then the first token creates it 0600', () => {
    const file = path.join(dir, 'tokens.json');
    createToken(file, 'a', ['refunds:read']);
    assert.equal(statSync(file).mode & 0o777, 0o600);
  });

  it('when the tokens file is 0640, then creating and revoking a token leave it 0640', () => {
    const file = path.join(dir, 'tokens.json');
    createToken(file, 'a', ['refunds:read']);
    chmodSync(file, 0o640);
    createToken(file, 'b', ['refunds:read']);
    assert.equal(statSync(file).mode & 0o777, 0o640);
    revokeToken(file, 'a');
    assert.equal(statSync(file).mode & 0o777, 0o640);
  });

  it('when root rewrites a tokens file of another owner and group, then it keeps that owner and group', function () {
    if (process.getuid?.() !== 0) this.skip();
    const file = path.join(dir, 'tokens.json');
    createToken(file, 'a', ['refunds:read']);
    chownSync(file, 0, 65534);
    chmodSync(file, 0o640);
    createToken(file, 'b', ['refunds:read']);
    const st = statSync(file);
    assert.deepEqual([st.uid, st.gid, st.mode & 0o777], [0, 65534, 0o640]);
  });
});
