import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import type { RunningApi } from '../../api/server';
import { newWallet, prepare, sampleIntent } from '../support/executions';
import { request } from '../support/http';
import { freePort } from '../support/ports';
import { getStack, startStackApi, type Stack } from '../support/stack';
import { changeOwnedBy } from '../support/whitelists';

describe('faults: the read model (PostgreSQL) is down when the API starts', function () {
  this.timeout(60_000);
  let stack: Stack;
  let api: RunningApi | undefined;
  before(async () => {
    stack = await getStack();
  });
  after(async () => {
    await api?.close(1000);
  });

  it('when the API starts with its database unreachable, then it serves executions and batches from Temporal, and answers lists, deposit lookups and prepares 503 with Retry-After', async () => {
    const url = `postgres://intent@127.0.0.1:${await freePort()}/gone`;
    api = await startStackApi(stack, {
      config: { ...stack.config, database: { ...stack.config.database, url } },
      logger: pino({ level: 'silent' }),
    });
    const wallet = newWallet();
    const executionId = `db-down-${randomUUID()}`;
    assert.equal((await prepare(stack, wallet, { executionId })).status, 201, 'prepared through the healthy API');
    const read = await request(api.url, 'GET', `/api/v1/executions/${wallet.id}/${executionId}`);
    assert.equal(read.status, 200, 'read from Temporal');
    const list = await request(api.url, 'GET', `/api/v1/executions/${wallet.id}`);
    assert.equal(list.status, 503);
    assert.ok(Number(list.headers.get('retry-after')) >= 1);
    const lookup = await request(api.url, 'GET', `/api/v1/deposits/evm:31337/0x${'ab'.repeat(32)}`);
    assert.equal(lookup.status, 503, 'the deposit lookup reads the read model only');
    assert.ok(Number(lookup.headers.get('retry-after')) >= 1);
    const fresh = await request(api.url, 'POST', `/api/v1/executions/${newWallet().id}`, {
      token: stack.tokens.all,
      json: { executionId: `db-down-${randomUUID()}`, intent: sampleIntent() },
    });
    assert.equal(fresh.status, 503, 'an id that cannot be checked against the read model starts no run');
    const batch = await request(api.url, 'POST', '/chain/whitelists/', {
      token: stack.tokens.all,
      json: [changeOwnedBy(stack, stack.nodes[0].url)],
    });
    assert.equal(batch.status, 200, JSON.stringify(batch.body));
  });
});
