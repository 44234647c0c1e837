import assert from 'node:assert/strict';
import { parseApplyAnswer } from '../../activities/storage-node-client';
import { auditRecordsOf } from '../../storage-node/audit-trail';
import { checkApplyRequest, checkAuditResponse } from '../../storage-node/protocol';
import { toApplyResponse, WhitelistState } from '../../storage-node/whitelist-state';

const change = { op_type: 'add_entry' as const, kind: 'user' as const, entry: '0x52908400098527886E0F7030069857D2E4169EE7' };

describe('unit: the storage-node wire contract is one module (storage-node/protocol.ts)', () => {
  it('when the node answers an apply, then the client reads that very answer, and refuses one off the contract', () => {
    const state = new WhitelistState();
    const plan = state.plan('b1', [change], { tokenId: 't', appliedAt: '2024-01-01T00:00:00.000Z' });
    assert.equal(plan.type, 'new');
    const answer = JSON.stringify(toApplyResponse(plan.record));
    const request = { node: 'http://n', batchId: 'b1', changes: [change], tokenId: 't' };
    assert.deepEqual(parseApplyAnswer(answer, request), [{ ...change, changed: true }]);
    for (const bad of [
      '{"ok":true}',
      '{"batchId":"b1","results":[{"kind":"user","entry":"x","op_type":"add_entry","changed":"yes"}]}',
      '{"batchId":"b2","results":[]}',
      'nope',
    ]) {
      assert.throws(() => parseApplyAnswer(bad, request), Error, bad);
    }
  });

  it('when an apply request carries the audit fields, then the contract accepts them, and refuses unknown ones', () => {
    assert.equal(checkApplyRequest({ batchId: 'b:revert', changes: [change], tokenId: 't', revertOf: 'b' }).ok, true);
    assert.equal(checkApplyRequest({ batchId: 'b', changes: [change], token: 'secret' }).ok, false);
  });

  it('when a logged revert batch (new or legacy) becomes audit records, then each names the batch it undid and passes the contract', () => {
    const legacy = auditRecordsOf({ seq: 4, batchId: 'x:revert', changes: [change], changed: [true] });
    const current = auditRecordsOf({
      seq: 5,
      batchId: 'y:revert',
      revertOf: 'y',
      tokenId: 't',
      appliedAt: '2024-01-01T00:00:00.000Z',
      changes: [change],
      changed: [false],
    });
    assert.deepEqual(
      legacy.map((r) => [r.batchId, r.revert, r.tokenId]),
      [['x', true, undefined]],
    );
    assert.deepEqual(
      current.map((r) => [r.batchId, r.revert, r.tokenId, r.changed]),
      [['y', true, 't', false]],
    );
    assert.equal(checkAuditResponse({ records: [...current, ...legacy] }).ok, true);
  });
});
