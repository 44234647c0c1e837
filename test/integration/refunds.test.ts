import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { projectRoot } from '../../config/config';
import { childEnv } from '../../config/child-env';
import { openDatabase } from '../../db/database';
import { RefundLedger } from '../../db/refund-ledger';
import { createToken } from '../../tokens/token-store';
import { depositHttp, eventually, newWallet, prepare } from '../support/executions';
import { request } from '../support/http';
import { getStack, startStackApi, type Stack } from '../support/stack';
import { postgresBinDir, startThrowawayPostgres, type ThrowawayPostgres } from '../support/postgres';
import type { RunningApi } from '../../api/server';

const run = promisify(execFile);

/** A refund transaction's hash (0x + 64 hex digits) named by `tag`. */
const refundTx = (tag: string) => '0x' + Buffer.from(tag).toString('hex').padStart(64, '0');

/**
 * The refunds ledger over real HTTP on the shared stack: deposits an execution refuses become rows,
 * listed with `refunds:read` and settled once with `refunds:write`.
 */
describe('refunds: the ledger routes (list with refunds:read, settle once with refunds:write)', function () {
  this.timeout(60_000);
  let stack: Stack;
  let reader: string;
  let writer: string;
  before(async () => {
    stack = await getStack();
    reader = createToken(stack.config.apiTokensFile, `refund-reader-${randomUUID()}`, ['refunds:read']);
    writer = createToken(stack.config.apiTokensFile, `refund-writer-${randomUUID()}`, ['refunds:read', 'refunds:write']);
  });

  /** An execution with its deposit and `n` other deposits reported after it: `n` rows due. */
  async function refused(n: number) {
    const wallet = newWallet();
    const executionId = `refund-${randomUUID()}`;
    assert.equal((await prepare(stack, wallet, { executionId })).status, 201);
    assert.equal((await depositHttp(stack, wallet.id, executionId, { txHash: '0xtaken', amount: '5' })).status, 200);
    for (let i = 0; i < n; i++)
      assert.equal((await depositHttp(stack, wallet.id, executionId, { txHash: `0xowed${i}`, amount: String(100 + i) })).status, 409);
    // The refusals the record keeps reach the ledger with the execution's projection, a moment later.
    await eventually(async () => {
      const res = await api('GET', `/api/v1/refunds?wallet=${wallet.id}&pageSize=200`, reader);
      return res.status === 200 && res.body.result.length === n;
    });
    return wallet;
  }
  const api = (method: string, path: string, token: string, json?: unknown) => request(stack.api.url, method, path, { token, json });

  it("when deposits are refused, then GET /api/v1/refunds lists them for the wallet, newest first, page by page, and the execution's projection rows and the API's are one list", async () => {
    const wallet = await refused(12);
    const seen: Array<{ txHash: string; state: string; amount: string; reason: string }> = [];
    let path = `/api/v1/refunds?state=due&wallet=${wallet.id}&pageSize=5`;
    for (;;) {
      const res = await api('GET', path, reader);
      assert.equal(res.status, 200, res.text);
      seen.push(...res.body.result);
      if (!res.body.nextPageToken) break;
      path = `/api/v1/refunds?state=due&wallet=${wallet.id}&pageSize=5&pageToken=${res.body.nextPageToken}`;
    }
    assert.equal(seen.length, 12);
    assert.deepEqual(new Set(seen.map((r) => r.txHash)), new Set(Array.from({ length: 12 }, (_, i) => `0xowed${i}`)));
    assert.ok(seen.every((r) => r.state === 'due' && r.reason === 'other-tx'));
    const times = seen.map((r: any) => r.createdAt);
    assert.deepEqual(times, [...times].sort().reverse(), 'newest first');
  });

  it('when an execution has refused more deposits than its record keeps, then its record shows the first 10, the total, and the ledger query that lists every one (GET and the list route alike)', async () => {
    const wallet = await refused(13);
    const quiet = `refund-quiet-${randomUUID()}`;
    assert.equal((await prepare(stack, wallet, { executionId: quiet })).status, 201);
    // The list reads the read model, which the new execution's projection reaches a moment later.
    const list = await eventually(async () => {
      const res = await request(stack.api.url, 'GET', `/api/v1/executions/${wallet.id}`);
      return res.status === 200 && res.body.result.length === 2 && res;
    });
    const [busy] = list.body.result.filter((r: { executionId: string }) => r.executionId !== quiet);
    const one = await request(stack.api.url, 'GET', `/api/v1/executions/${wallet.id}/${busy.executionId}`);
    assert.equal(one.status, 200, one.text);
    for (const record of [one.body.result, busy]) {
      assert.equal(record.refusedDeposits.length, 10);
      assert.equal(record.refunds.total, 13);
      assert.equal(record.refunds.url, `/api/v1/refunds?wallet=${wallet.id}&executionId=${busy.executionId}`);
    }
    const rows = await api('GET', `${one.body.result.refunds.url}&pageSize=200`, reader);
    assert.equal(rows.status, 200, rows.text);
    assert.deepEqual(
      new Set(rows.body.result.map((r: { txHash: string }) => r.txHash)),
      new Set(Array.from({ length: 13 }, (_, i) => `0xowed${i}`)),
    );
    const other = list.body.result.find((r: { executionId: string }) => r.executionId === quiet);
    assert.deepEqual(other.refunds, { total: 0, url: `/api/v1/refunds?wallet=${wallet.id}&executionId=${quiet}` });
    assert.equal((await api('GET', `/api/v1/refunds?executionId=..`, reader)).status, 400);
  });

  it('when a row is marked refunded twice with the same txHash, then 200 both times; with another txHash or waived, 409; the settling token is recorded', async () => {
    const wallet = await refused(2);
    const list = await api('GET', `/api/v1/refunds?wallet=${wallet.id}`, reader);
    const [one, two] = list.body.result;
    const hash = '0x' + 'aBcD'.repeat(16);
    const paid = await api('POST', `/api/v1/refunds/${one.id}/refunded`, writer, { txHash: hash });
    assert.equal(paid.status, 200, paid.text);
    assert.equal(paid.body.result.state, 'refunded');
    assert.equal(paid.body.result.refundTxHash, hash.toLowerCase());
    assert.match(paid.body.result.settledBy, /^refund-writer-/);
    for (const same of [hash, hash.toLowerCase(), '0x' + hash.slice(2).toUpperCase()]) {
      const again = await api('POST', `/api/v1/refunds/${one.id}/refunded`, writer, { txHash: same });
      assert.equal(again.status, 200, again.text);
      assert.deepEqual(again.body, paid.body);
    }
    const other = await api('POST', `/api/v1/refunds/${one.id}/refunded`, writer, { txHash: refundTx('another') });
    assert.equal(other.status, 409, other.text);
    assert.deepEqual(Object.keys(other.body), ['error', 'code']);
    assert.equal((await api('POST', `/api/v1/refunds/${one.id}/waived`, writer, { reason: 'dust' })).status, 409);
    const waived = await api('POST', `/api/v1/refunds/${two.id}/waived`, writer, { reason: 'below the cost of sending it' });
    assert.equal(waived.status, 200, waived.text);
    assert.equal(waived.body.result.waivedReason, 'below the cost of sending it');
    const due = await api('GET', `/api/v1/refunds?state=due&wallet=${wallet.id}`, reader);
    assert.deepEqual(due.body.result, []);
  });

  it('when the token lacks the scope, the id or the body is wrong, then 403, 404 and 400 with {error}', async () => {
    const wallet = await refused(1);
    const [row] = (await api('GET', `/api/v1/refunds?wallet=${wallet.id}`, reader)).body.result;
    const answers = [
      [await api('POST', `/api/v1/refunds/${row.id}/refunded`, reader, { txHash: refundTx('1') }), 403],
      [await api('GET', '/api/v1/refunds', stack.tokens.deposit), 403],
      [await api('POST', `/api/v1/refunds/${'0'.repeat(32)}/refunded`, writer, { txHash: refundTx('1') }), 404],
      [await api('POST', '/api/v1/refunds/not-an-id/refunded', writer, { txHash: refundTx('1') }), 400],
      [await api('POST', `/api/v1/refunds/${row.id}/refunded`, writer, { txHash: refundTx('1'), extra: true }), 400],
      [await api('GET', '/api/v1/refunds?state=owed', reader), 400],
      [await api('GET', '/api/v1/refunds?pageToken=forged', reader), 400],
      [await request(stack.api.url, 'GET', '/api/v1/refunds'), 401],
    ] as const;
    for (const [res, status] of answers) {
      assert.equal(res.status, status, res.text);
      assert.equal(typeof res.body.error, 'string');
    }
  });

  it('when a report (trusted: no on-chain target) gives an amount that is not base units, then 400 naming the rule, and no ledger row; base units are owed as sent', async () => {
    const wallet = newWallet();
    const executionId = `refund-${randomUUID()}`;
    assert.equal((await prepare(stack, wallet, { executionId })).status, 201);
    assert.equal((await depositHttp(stack, wallet.id, executionId, { txHash: '0xtaken', amount: '5' })).status, 200);
    for (const amount of ['0099.5', '99.5', '099', '-1', '1e3', '0x10', ' 1', '', (2n ** 256n).toString(), '9'.repeat(79)]) {
      const res = await depositHttp(stack, wallet.id, executionId, { txHash: `0xbad-${amount}`, amount });
      assert.equal(res.status, 400, `${amount}: ${res.text}`);
      assert.match(res.body.error, /amount must be (base units|at most 2\^256 − 1)/, amount);
    }
    const max = (2n ** 256n - 1n).toString();
    assert.equal((await depositHttp(stack, wallet.id, executionId, { txHash: '0xowed-max', amount: max })).status, 409);
    const rows = await eventually(async () => {
      const res = await api('GET', `/api/v1/refunds?wallet=${wallet.id}`, reader);
      return res.status === 200 && res.body.result.length >= 1 && res.body.result;
    });
    assert.deepEqual(
      rows.map((r: { txHash: string; amount: string }) => [r.txHash, r.amount]),
      [['0xowed-max', max]],
    );
  });

  it('when a refund txHash is not 0x + 64 hex digits, then 400 naming the rule, and the row stays due', async () => {
    const wallet = await refused(1);
    const [row] = (await api('GET', `/api/v1/refunds?wallet=${wallet.id}`, reader)).body.result;
    for (const txHash of ['0x1', 'refund-123', refundTx('x').slice(0, 65), refundTx('x') + '0', refundTx('x').replace('0x', '0X'), '']) {
      const res = await api('POST', `/api/v1/refunds/${row.id}/refunded`, writer, { txHash });
      assert.equal(res.status, 400, `${txHash}: ${res.text}`);
      assert.match(res.body.error, /txHash must be a transaction hash: 0x and 64 hex digits/);
    }
    const [still] = (await api('GET', `/api/v1/refunds?wallet=${wallet.id}`, reader)).body.result;
    assert.equal(still.state, 'due');
  });

  it("when one refund transaction is recorded for rows of two executions' deposits, then the second is 409 naming the first row, and stays due", async () => {
    const [a, b] = await Promise.all([refused(1), refused(1)]);
    const [rowA] = (await api('GET', `/api/v1/refunds?wallet=${a.id}`, reader)).body.result;
    const [rowB] = (await api('GET', `/api/v1/refunds?wallet=${b.id}`, reader)).body.result;
    const tx = `0x${randomUUID().replace(/-/g, '')}${randomUUID().replace(/-/g, '')}`;
    assert.equal((await api('POST', `/api/v1/refunds/${rowA.id}/refunded`, writer, { txHash: tx })).status, 200);
    const used = await api('POST', `/api/v1/refunds/${rowB.id}/refunded`, writer, { txHash: tx.toUpperCase().replace('0X', '0x') });
    assert.equal(used.status, 409, used.text);
    assert.match(used.body.error, new RegExp(`already pays back refund ${rowA.id}, of another deposit address`));
    const [still] = (await api('GET', `/api/v1/refunds?wallet=${b.id}`, reader)).body.result;
    assert.equal(still.state, 'due');
  });
});

describe('refunds: the ledger routes on a PostgreSQL read model (as in the cluster)', function () {
  this.timeout(60_000);
  let pg: ThrowawayPostgres | undefined;
  let api: RunningApi | undefined;
  after(async () => {
    await api?.close(1000);
    await pg?.stop();
  });

  it('when rows are owed in PostgreSQL, then an API on it lists them and settles each once', async function () {
    if (!postgresBinDir()) {
      console.log('    PostgreSQL server binaries are not installed (pg_config --bindir): the PostgreSQL ledger route test is skipped');
      this.skip();
    }
    const stack = await getStack();
    pg = await startThrowawayPostgres('refunds');
    const database = await openDatabase({ url: pg.url, sqliteFile: '' });
    const wallet = `pg-${randomUUID()}`;
    let id: string;
    try {
      const ledger = new RefundLedger(database);
      id = await ledger.recordDue({
        workflowId: `exec:${wallet}:e`,
        wallet,
        executionId: 'e',
        txHash: refundTx('owed'),
        amount: '9',
        reason: 'other-tx',
        reportedBy: 'api',
      });
    } finally {
      await database.close();
    }
    api = await startStackApi(stack, { config: { ...stack.config, database: { ...stack.config.database, url: pg.url } } });
    const listed = await request(api.url, 'GET', `/api/v1/refunds?wallet=${wallet}`, { token: stack.tokens.all });
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(
      listed.body.result.map((r: { id: string; state: string }) => [r.id, r.state]),
      [[id, 'due']],
    );
    const settle = (txHash: string) =>
      request(api!.url, 'POST', `/api/v1/refunds/${id}/refunded`, { token: stack.tokens.all, json: { txHash } });
    assert.equal((await settle(refundTx('paid'))).status, 200);
    assert.equal((await settle(refundTx('paid').toUpperCase().replace('0X', '0x'))).status, 200);
    assert.equal((await settle(refundTx('other'))).status, 409);
  });
});

describe('refunds: npm run refunds (the CLI on the read model)', function () {
  this.timeout(60_000);
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'refunds-cli-'));
  const sqliteFile = path.join(tmp, 'read-model.sqlite');
  const cli = (...args: string[]) =>
    run(process.execPath, [path.join(projectRoot, 'dist', 'scripts', 'refunds.js'), ...args], {
      env: childEnv({ DATABASE_FILE: sqliteFile, DATABASE_URL: '' }),
      encoding: 'utf8',
    }).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }),
    );
  let ids: string[] = [];
  before(async () => {
    const database = await openDatabase({ sqliteFile });
    const ledger = new RefundLedger(database);
    ids = [];
    for (let i = 0; i < 3; i++)
      ids.push(
        await ledger.recordDue({
          workflowId: `exec:w:e${i}`,
          wallet: 'w',
          executionId: `e${i}`,
          chain: 'evm:31337',
          txHash: `0x${i}`,
          amount: '7',
          reason: 'other-tx',
          reportedBy: 'chain-watcher',
        }),
      );
    await database.close();
  });
  after(() => rmSync(tmp, { recursive: true, force: true }));

  it('when an operator lists, pays one, pays it again, pays it otherwise and waives another, then the ledger says so and only the conflicting call fails', async () => {
    const listed = await cli('list');
    assert.equal(listed.code, 0, listed.stderr);
    assert.deepEqual(
      new Set(
        listed.stdout
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l).id),
      ),
      new Set(ids),
    );
    const paid = await cli('refunded', '--id', ids[0], '--tx-hash', refundTx('REFUND'), '--by', 'alice');
    assert.equal(paid.code, 0, paid.stderr);
    assert.deepEqual(
      [JSON.parse(paid.stdout).state, JSON.parse(paid.stdout).settledBy, JSON.parse(paid.stdout).refundTxHash],
      ['refunded', 'alice', refundTx('REFUND')],
    );
    assert.equal((await cli('refunded', '--id', ids[0], '--tx-hash', refundTx('REFUND').toUpperCase().replace('0X', '0x'))).code, 0);
    const other = await cli('refunded', '--id', ids[0], '--tx-hash', refundTx('other'));
    assert.equal(other.code, 1);
    assert.match(other.stderr, /already refunded otherwise/);
    const malformed = await cli('refunded', '--id', ids[2], '--tx-hash', '0xrefund');
    assert.deepEqual([malformed.code, malformed.stderr.trim()], [2, 'refunds: --tx-hash must be 0x + 64 hex digits']);
    const used = await cli('refunded', '--id', ids[2], '--tx-hash', refundTx('REFUND'));
    assert.equal(used.code, 1);
    assert.match(used.stderr, new RegExp(`already pays back row ${ids[0]}, of another deposit address`));
    assert.equal((await cli('waived', '--id', ids[1], '--reason', 'dust')).code, 0);
    const due = await cli('list', '--state', 'due');
    assert.deepEqual(
      due.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).id),
      [ids[2]],
    );
    assert.equal((await cli('refunded', '--id', ids[2])).code, 2, 'a settlement without its txHash is a usage error');
  });
});
