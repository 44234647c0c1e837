import assert from 'node:assert/strict';
import { isResultCap } from '../../lib/chain-reader';

describe('lib/chain-reader isResultCap: which node refusals a narrower log query answers', () => {
  it('when a node refuses eth_getLogs for its size, in the words providers use, then it is a result cap; anything else is not', () => {
    const coded = Object.assign(new Error('whatever the text'), { code: -32005 });
    for (const err of [
      coded,
      new Error('query returned more than 10000 results'),
      new Error('Log response size exceeded. You can make eth_getLogs requests with up to a 2K block range'),
      new Error('exceed maximum block range: 5000'),
      new Error('RPC failed', { cause: new Error('too many logs in the response') }),
    ])
      assert.equal(isResultCap(err), true, err.message);
    for (const err of [new Error('Method not found'), new Error('connection refused'), 'a string', undefined])
      assert.equal(isResultCap(err), false, String(err));
  });
});
