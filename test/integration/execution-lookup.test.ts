import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { IntentClient } from '@intent-service/client';
import { buildOpenApiDocument } from '../../api/operations/openapi';
import { loadConfig } from '../../config/config';
import { eventually, newWallet, prepare } from '../support/executions';
import { request } from '../support/http';
import { answerChecker } from '../support/openapi-check';
import { getStack, type Stack } from '../support/stack';

describe('integration: POST /api/v1/executions/lookup (batch lookup) and statusReason', function () {
  this.timeout(120_000);
  let stack: Stack;
  const check = answerChecker(buildOpenApiDocument(loadConfig({})) as Parameters<typeof answerChecker>[0]);
  before(async () => {
    stack = await getStack();
  });

  it('when 128 executions are asked (found, unknown and invalid mixed), then each is answered in the order asked with its record or its own error', async () => {
    const wallet = newWallet();
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const executionId = `lookup-${i}-${randomUUID()}`;
      assert.equal((await prepare(stack, wallet, { executionId })).status, 201);
      ids.push(executionId);
    }
    const asked = Array.from({ length: 128 }, (_, i) => {
      if (i % 32 === 0) return { wallet: wallet.id, executionId: ids[i / 32]! };
      if (i % 32 === 1) return { wallet: 'lookup', executionId: 'x' };
      if (i % 32 === 2) return { wallet: wallet.id, executionId: 'submit' };
      return { wallet: wallet.id, executionId: `unknown-${i}` };
    });
    const res = await request(stack.api.url, 'POST', '/api/v1/executions/lookup', { json: { executions: asked } });
    assert.equal(res.status, 200, res.text);
    check('/api/v1/executions/lookup', 'POST', 200, res.body);
    assert.equal(res.body.result.length, 128);
    res.body.result.forEach((item: any, i: number) => {
      if (i % 32 === 0) {
        assert.equal(item.record.executionId, ids[i / 32], `item ${i}`);
        assert.equal(item.record.status, 'PREPARED');
        assert.equal(item.record.statusReason.code, 'awaiting-deposit');
      } else if (i % 32 === 1 || i % 32 === 2) assert.equal(item.code, 'INVALID', `item ${i}: ${JSON.stringify(item)}`);
      else assert.deepEqual(item, { error: `no execution unknown-${i} for this wallet`, code: 'NOT_FOUND' });
    });
  });

  it('when 129 executions, none, or an item with an unknown field are asked, then the answer is 400 and names why', async () => {
    const item = { wallet: 'w', executionId: 'e' };
    const over = await request(stack.api.url, 'POST', '/api/v1/executions/lookup', { json: { executions: Array(129).fill(item) } });
    assert.equal(over.status, 400, over.text);
    assert.match(over.body.error, /executions must NOT have more than 128 items/);
    check('/api/v1/executions/lookup', 'POST', 400, over.body);
    assert.equal((await request(stack.api.url, 'POST', '/api/v1/executions/lookup', { json: { executions: [] } })).status, 400);
    const extra = await request(stack.api.url, 'POST', '/api/v1/executions/lookup', { json: { executions: [{ ...item, status: 'x' }] } });
    assert.equal(extra.status, 400);
    assert.match(extra.body.error, /unknown field "status"/);
  });

  it('when the SDK looks up executions, then it answers the same items; the GET of one and the list carry statusReason too', async () => {
    const wallet = newWallet();
    const executionId = `lookup-sdk-${randomUUID()}`;
    assert.equal((await prepare(stack, wallet, { executionId })).status, 201);
    const items = await new IntentClient({ baseUrl: stack.api.url }).lookup([
      { wallet: wallet.id, executionId },
      { wallet: wallet.id, executionId: 'nope' },
    ]);
    assert.equal('record' in items[0]! && items[0].record.statusReason?.code, 'awaiting-deposit');
    assert.deepEqual(items[1], { error: 'no execution nope for this wallet', code: 'NOT_FOUND' });
    const one = await request(stack.api.url, 'GET', `/api/v1/executions/${wallet.id}/${executionId}`);
    assert.equal(one.body.result.statusReason.code, 'awaiting-deposit');
    check('/api/v1/executions/{wallet}/{executionId}', 'GET', 200, one.body);
    const list = await eventually(async () => {
      const res = await request(stack.api.url, 'GET', `/api/v1/executions/${wallet.id}`);
      return res.body.result.length === 1 && res.body;
    }, 10_000);
    assert.equal(list.result[0].statusReason.code, 'awaiting-deposit');
  });
});
