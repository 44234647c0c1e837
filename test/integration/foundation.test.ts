import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { getStack, type Stack } from '../support/stack';
import { request } from '../support/http';
import { childEnv } from '../../config/child-env';

describe('foundation: the real stack', () => {
  let stack: Stack;
  before(async function () {
    this.timeout(120_000);
    stack = await getStack();
  });

  it('when the process is up, then /healthz answers 200', async () => {
    const res = await request(stack.api.url, 'GET', '/healthz');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { ok: true });
  });

  it('when Temporal and every storage node answer, then the public /readyz answers 200 naming no address, and the operator /readyz names each node up', async () => {
    const res = await request(stack.api.url, 'GET', '/readyz');
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, { ready: true, checks: { temporal: 'up', process: 'serving' }, down: [] });
    const detailed = await request(stack.api.operatorUrl!, 'GET', '/readyz');
    assert.equal(detailed.status, 200, detailed.text);
    for (const node of stack.nodes) assert.equal(detailed.body.storageNodes[node.url], 'up');
  });

  it('when /metrics is asked on the public port, then it is 404; on the operator port it is the Prometheus text', async () => {
    assert.equal((await request(stack.api.url, 'GET', '/metrics')).status, 404);
    const metrics = await request(stack.api.operatorUrl!, 'GET', '/metrics');
    assert.equal(metrics.status, 200);
    assert.match(metrics.text, /^# HELP intent_/m);
  });

  it('when the temporal CLI lists workflows on the test server, then it answers (exit 0)', () => {
    const out = execFileSync(
      stack.temporalBinary,
      ['workflow', 'list', '--address', stack.temporal.address, '--limit', '1', '-o', 'json'],
      {
        encoding: 'utf8',
        env: childEnv({ TEMPORAL_VERSION_CHECK_DISABLED: '1' }),
      },
    );
    assert.ok(out.trim().startsWith('[') || out.trim() === '', out);
  });

  it("when a known path is called with another method, then the answer is 405 in that operation's error style", async () => {
    const submit = await request(stack.api.url, 'PUT', '/api/v1/executions/w/submit');
    assert.equal(submit.status, 405);
    assert.deepEqual(Object.keys(submit.body), ['error', 'code']);
    const whitelist = await request(stack.api.url, 'GET', '/chain/whitelists/');
    assert.equal(whitelist.status, 405);
    assert.equal(whitelist.body.error, 'Method Not Allowed');
    assert.equal(typeof whitelist.body.errorMessage, 'string');
    assert.equal((await request(stack.api.url, 'PROPFIND', '/healthz')).status, 405);
  });

  it('when any known path is called with another method, then the 405 carries an Allow header naming its methods (RFC 9110)', async () => {
    const cases: Array<[string, string, string]> = [
      // No execution is named "submit": the path is the submit operation's only
      ['PUT', '/api/v1/executions/w/submit', 'POST'],
      ['GET', '/api/v1/executions/w/submit', 'POST'],
      ['GET', '/api/v1/executions/lookup', 'POST'],
      ['DELETE', '/api/v1/executions/w/e1/deposit', 'POST'],
      ['GET', '/chain/whitelists/', 'POST'],
      ['POST', '/healthz', 'HEAD, GET'],
      ['POST', '/readyz', 'HEAD, GET'],
      ['PUT', '/openapi.json', 'HEAD, GET'],
      ['PROPFIND', '/healthz', 'HEAD, GET'],
    ];
    for (const [method, path, allow] of cases) {
      const res = await request(stack.api.url, method, path);
      assert.equal(res.status, 405, `${method} ${path}`);
      assert.equal(res.headers.get('allow'), allow, `${method} ${path}`);
    }
    const options = await request(stack.api.url, 'OPTIONS', '/api/v1/executions/w/submit');
    assert.equal(options.headers.get('allow'), 'POST', 'OPTIONS names the operations of the path, as the contract has them');
    assert.equal((await request(stack.api.url, 'OPTIONS', '/api/v1/executions/w/e1')).headers.get('allow'), 'HEAD, GET');
  });

  it('when a route does not exist, then the answer is 404 with an error body', async () => {
    const res = await request(stack.api.url, 'GET', '/nope');
    assert.equal(res.status, 404);
    assert.equal(typeof res.body.error, 'string');
  });
});
