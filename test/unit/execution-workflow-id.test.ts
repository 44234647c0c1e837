import assert from 'node:assert/strict';
import fc from 'fast-check';
import { executionWorkflowId, parseExecutionWorkflowId } from '../../contracts/temporal';

describe('contracts/temporal parseExecutionWorkflowId: an execution workflow id read back into its wallet and execution id', () => {
  it('when any wallet without a colon and any execution id make a workflow id, then parsing it answers them both', () => {
    fc.assert(
      fc.property(
        fc.string().filter((w) => !w.includes(':')),
        fc.string({ unit: 'grapheme' }),
        (wallet, executionId) => {
          assert.deepEqual(parseExecutionWorkflowId(executionWorkflowId(wallet, executionId)), { wallet, executionId });
        },
      ),
    );
  });

  it('when an id is the API pattern of a wallet and an execution id, then it reads back whatever characters they use', () => {
    const id = fc.stringMatching(/^[A-Za-z0-9._-]{1,128}$/);
    fc.assert(
      fc.property(id, id, (wallet, executionId) => {
        assert.deepEqual(parseExecutionWorkflowId(executionWorkflowId(wallet, executionId)), { wallet, executionId });
      }),
    );
  });

  it("when a workflow id is another workflow's, then it is not an execution's", () => {
    for (const other of [
      'whitelist-batch:b1',
      'webhooks:exec:w:e',
      'chain-watcher:evm:1',
      'refund:evm:1:0xab',
      'exec:nocolon',
      'EXEC:w:e',
      '',
    ])
      assert.equal(parseExecutionWorkflowId(other), undefined, other);
  });

  it('when an execution id holds colons or a line break, then all of it after the wallet is the execution id', () => {
    assert.deepEqual(parseExecutionWorkflowId('exec:w:a:b\nc'), { wallet: 'w', executionId: 'a:b\nc' });
  });
});
