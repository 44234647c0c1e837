import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { openDatabase, type Database } from '../../db/database';
import { ExecutionStore } from '../../db/execution-store';
import { repairReadModel, repairQuery } from '../../scripts/db';
import { executionWorkflowId } from '../../contracts/temporal';
import { cancelBody, cancelHttp, depositHttp, eventually, getExecution, listHttp, newWallet, prepare } from '../support/executions';
import { newestFirst, walletRecords } from '../support/records';
import { request } from '../support/http';
import { getStack, type Stack } from '../support/stack';

describe('integration: the read model: GET /api/v1/executions/{wallet} (list), GET one after retention, repair', function () {
  this.timeout(120_000);
  let stack: Stack;
  let database: Database;
  let store: ExecutionStore;
  before(async () => {
    stack = await getStack();
    // A second connection to the SQLite file the stack's worker writes and its API reads.
    database = await openDatabase(stack.config.database);
    store = new ExecutionStore(database);
  });
  after(async () => {
    await database?.close();
  });

  it('when a wallet prepares, deposits and cancels through the API, then the list shows every execution newest first with its current status, written by the workflows', async () => {
    const wallet = newWallet();
    const ids = [];
    for (let i = 0; i < 3; i++) {
      const executionId = `list-${i}-${randomUUID()}`;
      assert.equal((await prepare(stack, wallet, { executionId })).status, 201);
      ids.push(executionId);
    }
    assert.equal((await depositHttp(stack, wallet.id, ids[1], { txHash: '0xlist' })).status, 200);
    assert.equal((await cancelHttp(stack.api.url, wallet.id, ids[2], cancelBody(wallet, ids[2]))).status, 200);
    const listed = await eventually(async () => {
      const res = await listHttp(stack.api.url, wallet.id);
      assert.equal(res.status, 200, res.text);
      const statuses = res.body.result.map((r: { status: string }) => r.status);
      return statuses.join() === 'CANCELLED,OPERATION_PENDING,PREPARED' && res.body;
    }, 15_000);
    assert.deepEqual(
      listed.result.map((r: { executionId: string }) => r.executionId),
      [...ids].reverse(),
    );
    assert.equal(listed.nextPageToken, undefined);
    const filtered = await listHttp(stack.api.url, wallet.id, '?status=CANCELLED,PREPARED');
    assert.deepEqual(
      filtered.body.result.map((r: { executionId: string }) => r.executionId),
      [ids[2], ids[0]],
    );
    assert.deepEqual((await listHttp(stack.api.url, newWallet().id)).body, { result: [] }, 'a wallet with no executions: an empty page');
  });

  it('when a wallet has 1,000 executions, then paging through the API (default size, and 100) returns each exactly once, newest first', async () => {
    const wallet = `wallet-k-${randomUUID().slice(0, 8)}`;
    const records = walletRecords(wallet, 1000);
    for (const r of records) await store.upsert(executionWorkflowId(wallet, r.executionId), r);
    const expected = newestFirst(records).map((r) => r.executionId);
    for (const size of [undefined, 100]) {
      const seen: string[] = [];
      let token: string | undefined;
      let pages = 0;
      do {
        const query = new URLSearchParams();
        if (size) query.set('pageSize', String(size));
        if (token) query.set('pageToken', token);
        const res = await listHttp(stack.api.url, wallet, `?${query}`);
        assert.equal(res.status, 200, res.text);
        assert.ok(res.body.result.length <= (size ?? 20));
        seen.push(...res.body.result.map((r: { executionId: string }) => r.executionId));
        token = res.body.nextPageToken;
        pages++;
      } while (token && pages < 1000);
      assert.equal(pages, 1000 / (size ?? 20));
      assert.equal(new Set(seen).size, 1000, `no duplicates at pageSize ${size ?? 'default'}`);
      assert.deepEqual(seen, expected);
    }
  });

  it('when the query is off (unknown status, pageSize 0/101/x, a forged pageToken, an unknown or repeated parameter), then 400 { error }', async () => {
    const wallet = newWallet().id;
    for (const query of [
      '?status=DONE',
      '?status=PREPARED,',
      '?status=prepared',
      '?pageSize=0',
      '?pageSize=101',
      '?pageSize=x',
      '?pageToken=abc',
      '?pageToken=' + Buffer.from('["x","y"]').toString('base64url'),
      '?page=2',
      '?status=PREPARED&status=SIGNING',
    ]) {
      const res = await listHttp(stack.api.url, wallet, query);
      assert.equal(res.status, 400, `${query}: ${res.text}`);
      assert.equal(typeof res.body.error, 'string');
    }
  });

  it('when Temporal no longer has the workflow (removed as after its retention), then GET one answers from the read model; an unknown id is still 404', async () => {
    const wallet = newWallet();
    const executionId = `gone-${randomUUID()}`;
    assert.equal((await prepare(stack, wallet, { executionId })).status, 201);
    assert.equal((await cancelHttp(stack.api.url, wallet.id, executionId, cancelBody(wallet, executionId))).status, 200);
    await eventually(async () => (await store.get(wallet.id, executionId))?.status === 'CANCELLED', 15_000);
    const workflowId = executionWorkflowId(wallet.id, executionId);
    // The run has closed (at CANCELLED); the server deletes a closed run from a queued task, which
    // took about 30 s on the dev server.
    await stack.client.workflowService.deleteWorkflowExecution({
      namespace: stack.config.temporal.namespace,
      workflowExecution: { workflowId },
    });
    await eventually(
      async () =>
        stack.client.workflow
          .getHandle(workflowId)
          .describe()
          .then(
            () => false,
            () => true,
          ),
      60_000,
    );
    const res = await getExecution(stack, wallet.id, executionId);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.result.status, 'CANCELLED');
    assert.deepEqual(
      res.body.result.history.map((h: { status: string }) => h.status),
      ['PREPARED', 'CANCELLED'],
    );
    // A cancel of it again is still answered from the final record.
    assert.equal((await cancelHttp(stack.api.url, wallet.id, executionId, cancelBody(wallet, executionId))).status, 200);
    assert.equal((await getExecution(stack, wallet.id, 'never-prepared')).status, 404);
  });

  it('when read model rows are lost, then the repair command re-projects them from Temporal', async () => {
    const wallet = newWallet();
    const executionId = `repair-${randomUUID()}`;
    assert.equal((await prepare(stack, wallet, { executionId })).status, 201);
    assert.equal((await depositHttp(stack, wallet.id, executionId, { txHash: '0xrepair' })).status, 200);
    await eventually(async () => (await store.get(wallet.id, executionId))?.status === 'OPERATION_PENDING', 15_000);
    await database.db.deleteFrom('executions').where('wallet', '=', wallet.id).execute();
    assert.equal(await store.get(wallet.id, executionId), undefined);
    // Visibility is eventually consistent: the repair finds the workflow once it is indexed.
    const result = await eventually(async () => {
      const r = await repairReadModel(stack.client, store, repairQuery({ wallet: wallet.id }));
      return r.seen === 1 && r;
    }, 15_000);
    assert.deepEqual(result, { seen: 1, written: 1, failed: [] });
    assert.equal((await store.get(wallet.id, executionId))?.status, 'OPERATION_PENDING');
    const again = await repairReadModel(stack.client, store, repairQuery({ wallet: wallet.id }));
    assert.equal(again.written, 0, 'a second repair finds nothing to change');
  });

  it('when the same prepare is sent again, then 200 with the existing record and Idempotent-Replayed: true; other content under the id is 409', async () => {
    const wallet = newWallet();
    const body = { executionId: `idem-${randomUUID()}`, intent: { action: 'swap', amount: '1' }, ttlSeconds: 600 };
    const first = await prepare(stack, wallet, body);
    assert.equal(first.status, 201, first.text);
    assert.equal(first.headers.get('idempotent-replayed'), null);
    const again = await prepare(stack, wallet, body);
    assert.equal(again.status, 200, again.text);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(again.body.result, first.body.result);
    for (const changed of [{ intent: { action: 'swap', amount: '2' } }, { ttlSeconds: 601 }, { signerPublicKey: newWallet().id }]) {
      const res = await prepare(stack, wallet, { ...body, ...changed });
      assert.equal(res.status, 409, `${JSON.stringify(changed)}: ${res.text}`);
    }
    // Same content with the keys in another order: the same intentHash (RFC 8785), so the same prepare.
    const reordered = await request(stack.api.url, 'POST', `/api/v1/executions/${wallet.id}`, {
      token: stack.tokens.all,
      json: { ttlSeconds: 600, intent: { amount: '1', action: 'swap' }, executionId: body.executionId },
    });
    assert.equal(reordered.status, 200, reordered.text);
  });
});
