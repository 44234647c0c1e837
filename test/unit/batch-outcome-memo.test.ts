import assert from 'node:assert/strict';
import { batchOutcomeMemo, outcomeOfMemo } from '../../domain/batch-outcome-memo';
import { confirmationOfChecksummed, type WhitelistChange } from '../../domain/whitelist-messages';

describe('unit: a batch outcome in its compact form (decision 0017)', () => {
  const NODES = ['http://n1', 'http://n2', 'http://n3'];
  const changes: WhitelistChange[] = [0, 1, 2, 3, 4].map((i) => ({
    op_type: i === 3 ? 'remove_entry' : 'add_entry',
    kind: i % 2 ? 'user' : 'developer',
    entry: `0x${String(i).padStart(40, '0')}`,
  }));
  const owners = changes.map((_, i) => [NODES[i % 3]]);

  it('when every node applied (200), then the memo carries only the status and the API confirms every change in request order', () => {
    const memo = batchOutcomeMemo({ status: 200 }, NODES);
    assert.deepEqual(memo, { status: 200 });
    assert.deepEqual(outcomeOfMemo(memo, changes, owners), { status: 200, confirmations: changes.map(confirmationOfChecksummed) });
  });

  it('when a node was late (408), then the memo names the nodes that applied and the API confirms only their changes, in request order', () => {
    const memo = batchOutcomeMemo({ status: 408, errorMessage: 'late' }, [NODES[0], NODES[2]]);
    assert.deepEqual(memo, { status: 408, errorMessage: 'late', appliedNodes: [NODES[0], NODES[2]] });
    const outcome = outcomeOfMemo(JSON.parse(JSON.stringify(memo)), changes, owners);
    assert.deepEqual(outcome, {
      status: 408,
      errorMessage: 'late',
      confirmations: [changes[0], changes[2], changes[3]].map(confirmationOfChecksummed),
    });
  });

  it('when each change has three replicas (408), then a change is confirmed only where a majority of its replicas applied', () => {
    const sets = changes.map((_, i) => [NODES[i % 3], NODES[(i + 1) % 3], NODES[(i + 2) % 3]]);
    const one = outcomeOfMemo(batchOutcomeMemo({ status: 408 }, [NODES[0]]), changes, sets);
    assert.deepEqual(one.confirmations, [], 'one of three is no majority');
    const two = outcomeOfMemo(batchOutcomeMemo({ status: 408 }, [NODES[0], NODES[2]]), changes, sets);
    assert.deepEqual(two.confirmations, changes.map(confirmationOfChecksummed), 'two of three is');
  });

  it('when the batch was refused (403) or failed (500), then nothing is confirmed, whatever applied, and the message is kept', () => {
    for (const status of [403, 500] as const) {
      const memo = batchOutcomeMemo({ status, errorMessage: `no (${status})` }, NODES);
      assert.deepEqual(memo, { status, errorMessage: `no (${status})` });
      assert.deepEqual(outcomeOfMemo(memo, changes, owners), { status, confirmations: [], errorMessage: `no (${status})` });
    }
  });
});
