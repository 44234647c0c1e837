import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import crypto, { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { projectRoot } from '../../config/config';
import { childEnv } from '../../config/child-env';
import { TokenStore, createToken, listTokens, revokeToken } from '../../tokens/token-store';
import { request, type HttpAnswer } from '../support/http';
import { getStack, type Stack } from '../support/stack';
import { newWallet, prepare } from '../support/executions';
import { postBatch, randomEoa } from '../support/whitelists';

// Bearer tokens: kept only as hashes, compared against every record, refused the moment they are
// revoked, and never written to a log line or an error body.

const sha256Hex = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

describe('tokens: hashed at rest, compared against every record, revoked at once, never echoed', function () {
  this.timeout(60_000);
  let stack: Stack;
  /** Every answer these tests got with a token in hand, to check none echoes it. */
  const answers: HttpAnswer[] = [];
  const used: string[] = [];
  before(async () => {
    stack = await getStack();
    used.push(...Object.values(stack.tokens));
  });

  it('when eight `token create` processes run at once on one file, then every token is kept (none lost to another writer)', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tokens-race-'));
    const file = path.join(dir, 'tokens.json');
    try {
      const created = await Promise.all(
        Array.from(
          { length: 8 },
          (_, i) =>
            new Promise<string>((resolve, reject) =>
              execFile(
                process.execPath,
                [path.join(projectRoot, 'dist', 'scripts', 'token.js'), 'create', '--id', `racer-${i}`, '--scope', 'whitelist:read'],
                { env: childEnv({ API_TOKENS_FILE: file }) },
                (err, stdout) => (err ? reject(err) : resolve(stdout.trim())),
              ),
            ),
        ),
      );
      assert.deepEqual(
        listTokens(file)
          .map((t) => t.id)
          .sort(),
        Array.from({ length: 8 }, (_, i) => `racer-${i}`),
      );
      const store = new TokenStore(file);
      assert.ok(created.every((token, i) => store.authenticate(token)?.id === `racer-${i}`));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("when the tokens file is read, then it holds each token's SHA-256 and never the token nor its secret part, and only its owner may read it", () => {
    const file = stack.config.apiTokensFile;
    const text = readFileSync(file, 'utf8');
    for (const [name, token] of Object.entries(stack.tokens)) {
      assert.ok(!text.includes(token), `token ${name} in the file`);
      assert.ok(!text.includes(token.slice(4)), `the secret part of ${name} in the file`);
      assert.ok(!text.includes(Buffer.from(token).toString('base64')), `token ${name} base64 in the file`);
      assert.ok(text.includes(sha256Hex(token)), `the hash of ${name} is recorded`);
    }
    assert.equal(statSync(file).mode & 0o077, 0, 'no group or other access');
    for (const record of JSON.parse(text).tokens) assert.deepEqual(Object.keys(record).sort(), ['createdAt', 'id', 'scopes', 'sha256']);
  });

  it('when a token is looked up, then it is compared (timingSafeEqual, by hash) against every record, wherever it matches and when it matches none', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'hostile-tokens-'));
    const file = path.join(dir, 'tokens.json');
    const tokens = Array.from({ length: 7 }, (_, i) => createToken(file, `t${i}`, ['executions:prepare']));
    const store = new TokenStore(file);
    const original = crypto.timingSafeEqual;
    const compared: Array<[string, string]> = [];
    // token-store calls crypto.timingSafeEqual through the module object, so the spy sees every call.
    crypto.timingSafeEqual = ((a: NodeJS.ArrayBufferView, b: NodeJS.ArrayBufferView) => {
      compared.push([
        Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString('hex'),
        Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex'),
      ]);
      return original(a, b);
    }) as typeof crypto.timingSafeEqual;
    try {
      for (const [presented, expected] of [
        [tokens[0], 't0'],
        [tokens[3], 't3'],
        [tokens[6], 't6'],
        ['ist_unknown', undefined],
        ['', undefined],
        [tokens[6].slice(0, -1), undefined],
      ] as const) {
        compared.length = 0;
        assert.equal(store.authenticate(presented)?.id, expected);
        assert.equal(compared.length, tokens.length, `${expected ?? 'no match'}: one constant-time comparison per record`);
        assert.ok(
          compared.every(([a]) => a === sha256Hex(presented)),
          'the hash of the presented token is compared, never the token',
        );
        assert.deepEqual(compared.map(([, b]) => b).sort(), tokens.map(sha256Hex).sort(), 'against every record');
      }
    } finally {
      crypto.timingSafeEqual = original;
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('when a token is revoked (or replaced under its id), then the very next request with it is 401 on every authenticated route', async () => {
    const file = stack.config.apiTokensFile;
    const wallet = newWallet();
    const token = createToken(file, 'hostile-revocable', ['executions:prepare', 'executions:deposit', 'whitelist:*']);
    used.push(token);
    const before = [await prepare(stack, wallet, {}, token), await postBatch(stack, [], { token })];
    answers.push(...before);
    assert.deepEqual(
      before.map((r) => r.status),
      [201, 400],
      'accepted before (400: the empty batch passed authentication)',
    );

    assert.equal(revokeToken(file, 'hostile-revocable'), true);
    const after = [
      await prepare(stack, wallet, {}, token),
      await postBatch(stack, [{ op_type: 'add_entry', kind: 'user', entry: randomEoa() }], { token }),
      await request(stack.api.url, 'POST', `/api/v1/executions/${wallet.id}/x/deposit`, { token, json: { txHash: '0x1' } }),
    ];
    answers.push(...after);
    assert.deepEqual(
      after.map((r) => r.status),
      [401, 401, 401],
    );

    // Rotation: a new token under the same id; the old one is refused at once, the new one accepted.
    const first = createToken(file, 'hostile-rotated', ['whitelist:*']);
    const second = createToken(file, 'hostile-rotated', ['whitelist:*']);
    used.push(first, second);
    const [old, current] = [await postBatch(stack, [], { token: first }), await postBatch(stack, [], { token: second })];
    answers.push(old, current);
    assert.deepEqual([old.status, current.status], [401, 400]);
    revokeToken(file, 'hostile-rotated');
  });

  it('when requests carrying tokens fail (401 for extra text, 403, 400, 404, 409), then no error body and no API log line holds any token', async () => {
    const { tokens } = stack;
    const wallet = newWallet();
    const execution = await prepare(stack, wallet, { executionId: 'tokens-echo' }, tokens.all);
    answers.push(execution, await prepare(stack, wallet, { executionId: 'tokens-echo' }, tokens.all)); // 409
    answers.push(await prepare(stack, wallet, {}, tokens.deposit)); // 403
    answers.push(await prepare(stack, wallet, { extra: tokens.all }, tokens.all)); // 400 naming the unknown field, not its value
    answers.push(
      await request(stack.api.url, 'POST', `/api/v1/executions/${wallet.id}`, {
        headers: { authorization: `Bearer ${tokens.all} trailing` },
        json: { intent: {} },
      }),
    ); // 401
    answers.push(
      await request(stack.api.url, 'POST', `/api/v1/executions/${wallet.id}`, {
        headers: { authorization: `Token ${tokens.all}` },
        json: { intent: {} },
      }),
    ); // 401
    answers.push(
      await request(stack.api.url, 'POST', `/api/v1/executions/${wallet.id}/nope/deposit`, { token: tokens.all, json: { txHash: '0x1' } }),
    ); // 404
    answers.push(await postBatch(stack, [{ op_type: 'add_entry', kind: 'user', entry: randomEoa() }], { token: tokens.devAdd })); // 403
    answers.push(await postBatch(stack, [{ op_type: 'add_entry', kind: 'user', entry: 'not-an-eoa' }], { token: tokens.all })); // 400
    answers.push(await postBatch(stack, [], { token: '', headers: { authorization: `Bearer ${tokens.all}.x`, timeout: tokens.all } })); // 401
    assert.deepEqual(
      answers.slice(-10).map((a) => a.status),
      [201, 409, 403, 400, 401, 401, 404, 403, 400, 401],
    );

    for (const answer of answers) {
      for (const token of used) {
        assert.ok(!answer.text.includes(token), `a ${answer.status} body holds a token: ${answer.text.slice(0, 200)}`);
        assert.ok(!answer.text.includes(token.slice(4)), `a ${answer.status} body holds a token's secret part`);
        for (const [, value] of answer.headers) assert.ok(!value.includes(token.slice(4)), 'a response header holds a token');
      }
    }
    const log = JSON.stringify(stack.apiLog);
    assert.ok(stack.apiLog.length > 0, 'the API logged');
    for (const token of used) {
      assert.ok(!log.includes(token.slice(4)), 'an API log line holds a token');
      assert.ok(!log.includes(sha256Hex(token)), 'an API log line holds a token hash');
    }
  });
});
