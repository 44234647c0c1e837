import assert from 'node:assert/strict';
import { parseApplyAnswer } from '../../activities/storage-node-client';
import { checkApplyRequest, checkAuditResponse } from '../../contracts/storage-node-protocol';
import { parseApplyRequest } from '../../storage-node/validate';

const change = { op_type: 'add_entry' as const, kind: 'user' as const, entry: '0x52908400098527886E0F7030069857D2E4169EE7' };

describe('unit: the storage-node wire contract is one module (contracts/storage-node-protocol.ts)', () => {
  it('when the node answers an apply, then the client reads that very answer, and refuses one off the contract', () => {
    const answer = JSON.stringify({ batchId: 'b1', results: [{ ...change, changed: true, superseded: false }] });
    const request = { node: 'http://n', batchId: 'b1', position: 1, changes: [change], tokenId: 't' };
    assert.deepEqual(parseApplyAnswer(answer, request), [{ ...change, changed: true, superseded: false }]);
    for (const bad of [
      '{"ok":true}',
      '{"batchId":"b1","results":[{"kind":"user","entry":"x","op_type":"add_entry","changed":"yes","superseded":false}]}',
      '{"batchId":"b1","results":[{"kind":"user","entry":"x","op_type":"add_entry","changed":true}]}',
      '{"batchId":"b2","results":[]}',
      'nope',
    ]) {
      assert.throws(() => parseApplyAnswer(bad, request), Error, bad);
    }
  });

  it('when an apply request carries its position, token and revert flag, then the contract accepts them, and refuses unknown or missing ones', () => {
    assert.equal(checkApplyRequest({ batchId: 'b', position: 5, changes: [change], tokenId: 't', revert: true }).ok, true);
    assert.equal(checkApplyRequest({ batchId: 'b', changes: [change] }).ok, false, 'position is required');
    assert.equal(checkApplyRequest({ batchId: 'b', position: -1, changes: [change] }).ok, false);
    assert.equal(checkApplyRequest({ batchId: 'b', position: 1.5, changes: [change] }).ok, false);
    assert.equal(checkApplyRequest({ batchId: 'b', position: 1, changes: [change], token: 'secret' }).ok, false);
  });

  it('when an entry is not an EOA in its EIP-55 form, then the node refuses the whole request (400)', () => {
    for (const entry of [
      'not-even-an-address',
      '0x52908400098527886e0f7030069857d2e4169ee7',
      '0x52908400098527886E0F7030069857D2E4169Ee7',
    ]) {
      assert.throws(
        () => parseApplyRequest({ batchId: 'b', position: 1, changes: [change, { ...change, entry }] }),
        (err: Error & { status?: number }) => err.status === 400 && /changes\.1\.entry/.test(err.message),
        entry,
      );
    }
    assert.deepEqual(parseApplyRequest({ batchId: 'b', position: 1, changes: [change] }).changes, [change]);
  });

  it('when an audit page carries the order and the verdicts, then it passes the contract, and a record without its time does not', () => {
    const record = {
      seq: 1,
      index: 0,
      batchId: 'b',
      position: 7,
      revert: false,
      ...change,
      changed: true,
      superseded: false,
      tokenId: 't',
      appliedAt: '2024-01-01T00:00:00.000Z',
    };
    assert.equal(checkAuditResponse({ records: [record], next: '1:0' }).ok, true);
    const { appliedAt: _dropped, ...untimed } = record;
    assert.equal(checkAuditResponse({ records: [untimed] }).ok, false);
  });
});
