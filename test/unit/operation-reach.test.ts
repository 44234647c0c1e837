import assert from 'node:assert/strict';
import { harExchanges, operationReach } from '../../scripts/lib/operation-reach';

describe('unit: which operations a recorded run reached past 404', () => {
  const paths = {
    '/api/v1/executions/{wallet}': { post: {}, get: {} },
    '/api/v1/executions/lookup': { post: {} },
    '/api/v1/executions/{wallet}/{executionId}': { get: {}, parameters: [] },
    '/api/v1/executions/{wallet}/submit': { post: {} },
  };
  const at = (method: string, path: string, status: number) => ({ method, url: `http://127.0.0.1:1${path}?x=1`, status });

  it('when requests fit several templates, then each counts for the one with the most literal segments of its method', () => {
    const reach = operationReach(paths, [
      at('POST', '/api/v1/executions/lookup', 200),
      at('POST', '/api/v1/executions/w1', 201),
      at('POST', '/api/v1/executions/w1/submit', 400),
      at('GET', '/api/v1/executions/w1/submit', 404),
    ]);
    assert.deepEqual(
      reach.map((r) => [r.operation, r.statuses, r.reached]),
      [
        ['GET /api/v1/executions/{wallet}', {}, false],
        ['GET /api/v1/executions/{wallet}/{executionId}', { 404: 1 }, false],
        ['POST /api/v1/executions/lookup', { 200: 1 }, true],
        ['POST /api/v1/executions/{wallet}', { 201: 1 }, true],
        ['POST /api/v1/executions/{wallet}/submit', { 400: 1 }, true],
      ],
    );
  });

  it('when an operation only ever got 404 or no answer, then it is not reached; one other answer reaches it', () => {
    const only404 = operationReach(paths, [at('GET', '/api/v1/executions/a/b', 404), at('GET', '/api/v1/executions/a/c', 0)]);
    assert.equal(only404.find((r) => r.operation.endsWith('{executionId}'))!.reached, false);
    const one = operationReach(paths, [at('GET', '/api/v1/executions/a/b', 404), at('GET', '/api/v1/executions/a/c', 500)]);
    assert.equal(one.find((r) => r.operation.endsWith('{executionId}'))!.reached, true);
  });

  it('when a HAR document is read, then its entries become exchanges, and a document without entries is refused', () => {
    const har = {
      log: {
        entries: [
          { request: { method: 'GET', url: 'http://h/x' }, response: { status: 204 } },
          { request: { method: 'POST', url: 'http://h/y' } },
        ],
      },
    };
    assert.deepEqual(harExchanges(har), [
      { method: 'GET', url: 'http://h/x', status: 204 },
      { method: 'POST', url: 'http://h/y', status: 0 },
    ]);
    assert.throws(() => harExchanges({}), /no log.entries/);
  });
});
