import assert from 'node:assert/strict';
import { publicMethods } from '../../api/http/cors';

describe('api/cors publicMethods', () => {
  it('when a path is a public execution route, then its public methods are allowed; token routes and others get none', () => {
    const cases: Array<[string, string[]]> = [
      ['/api/v1/executions/W', ['GET']],
      ['/api/v1/executions/W/submit', ['POST']],
      ['/api/v1/executions/W/ex-1', ['GET']],
      ['/api/v1/executions/W/ex-1/cancel', ['POST']],
      ['/api/v1/executions/W/ex-1/events', ['GET']],
      ['/api/v1/executions/W/ex-1/deposit', []],
      ['/chain/whitelists/', []],
      ['/chain/whitelists', []],
      ['/metrics', []],
      ['/api/v1/executions/W/ex-1/cancel/more', []],
    ];
    for (const [path, methods] of cases) assert.deepEqual(publicMethods(path), methods, path);
  });
});
