import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { startWorker } from '../../worker/create-worker';
import { eventually } from '../support/executions';
import { request } from '../support/http';
import { getStack, startStackApi } from '../support/stack';
import { nodeEntries } from '../support/whitelists';

// What an overloaded worker looks like to the API, made deterministic: the batch workflow starts on a
// task queue no worker polls, so it cannot answer by its deadline. docs/api-whitelists.md "Changing entries" promises 408
// with an empty result (the batch still runs when a worker comes back). The Temporal client rejects
// the start operation's handle whenever the update-with-start call times out, so the API asks
// Temporal whether the batch exists before it picks 408 over 500.

describe('whitelist deadline: a batch whose workflow cannot answer by its deadline', function () {
  this.timeout(90_000);

  it("when no worker polls the batch's task queue by the deadline, then the API answers 408 with X-Batch-Id and an empty result, and the change is applied once a worker polls", async () => {
    const stack = await getStack();
    const taskQueue = `no-worker-${process.pid}-${randomBytes(4).toString('hex')}`;
    const config = { ...stack.config, port: 0, temporal: { ...stack.config.temporal, taskQueue } };
    const api = await startStackApi(stack, { config, logger: pino({ level: 'silent' }) });
    const entry = '0x' + randomBytes(20).toString('hex');
    try {
      const res = await request(api.url, 'POST', '/chain/whitelists/', {
        token: stack.tokens.all,
        json: [{ op_type: 'add_entry', kind: 'user', entry }],
        headers: { timeout: '1000' },
      });
      assert.equal(res.status, 408, res.text);
      assert.deepEqual(res.body.result, []);
      assert.match(res.headers.get('x-batch-id') ?? '', /^[0-9a-f-]{36}$/);
    } finally {
      await api.close(1000);
    }
    const worker = await startWorker(config, stack.temporal.address);
    try {
      await eventually(
        async () => (await Promise.all(stack.nodes.map((n) => nodeEntries(n.url, 'user')))).flat().some((e) => e.toLowerCase() === entry),
        30_000,
      );
    } finally {
      await worker.shutdown();
    }
  });
});
