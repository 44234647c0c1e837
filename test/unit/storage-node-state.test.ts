import assert from 'node:assert/strict';
import type { WhitelistChange } from '../../storage-node/protocol';
import { toApplyResponse, WhitelistState, type ApplyPlan } from '../../storage-node/whitelist-state';

const add = (kind: WhitelistChange['kind'], entry: string): WhitelistChange => ({ op_type: 'add_entry', kind, entry });
const remove = (kind: WhitelistChange['kind'], entry: string): WhitelistChange => ({ op_type: 'remove_entry', kind, entry });

/** Plans and commits like the store does, returning the `changed` flags. */
function applyNew(state: WhitelistState, batchId: string, changes: WhitelistChange[]): boolean[] {
  const plan = state.plan(batchId, changes);
  assert.equal(plan.type, 'new');
  state.commit(plan.record);
  return plan.record.changed;
}

describe('storage node whitelist state', () => {
  it('when a batch is planned, then nothing changes until it is committed', () => {
    const state = new WhitelistState();
    const plan = state.plan('b1', [add('user', 'a')]);
    assert.deepEqual(state.entries('user'), []);
    assert.equal(state.remembers('b1'), false);
    state.commit(plan.record);
    assert.deepEqual(state.entries('user'), ['a']);
    assert.equal(state.remembers('b1'), true);
  });

  it('when changes in one batch touch one entry, then they apply in order', () => {
    const state = new WhitelistState();
    assert.deepEqual(applyNew(state, 'b1', [add('user', 'a'), remove('user', 'a')]), [true, true]);
    assert.deepEqual(applyNew(state, 'b2', [add('user', 'a'), add('user', 'a'), remove('user', 'a'), remove('user', 'a')]), [
      true,
      false,
      true,
      false,
    ]);
    assert.deepEqual(state.entries('user'), []);
  });

  it('when adding a present entry or removing an absent one, then changed is false', () => {
    const state = new WhitelistState();
    applyNew(state, 'b1', [add('developer', 'a')]);
    assert.deepEqual(applyNew(state, 'b2', [add('developer', 'a'), remove('developer', 'b')]), [false, false]);
  });

  it('when the same entry is in both kinds, then the kinds are independent', () => {
    const state = new WhitelistState();
    assert.deepEqual(applyNew(state, 'b1', [add('developer', 'a'), remove('user', 'a'), add('user', 'a')]), [true, false, true]);
    applyNew(state, 'b2', [remove('developer', 'a')]);
    assert.deepEqual(state.entries('developer'), []);
    assert.deepEqual(state.entries('user'), ['a']);
  });

  it('when entries differ only in case, then they are different entries', () => {
    const state = new WhitelistState();
    assert.deepEqual(applyNew(state, 'b1', [add('user', '0xAB'), add('user', '0xab'), remove('user', '0xAb')]), [true, true, false]);
    assert.deepEqual(state.entries('user'), ['0xAB', '0xab']);
  });

  it('when entries are listed, then they come sorted case-insensitively, exact text breaking ties', () => {
    const state = new WhitelistState();
    applyNew(
      state,
      'b1',
      ['c', 'a', 'B', 'b'].map((entry) => add('user', entry)),
    );
    assert.deepEqual(state.entries('user'), ['a', 'B', 'b', 'c']);
  });

  it('when a page is asked after an entry, then it starts past that entry (present or not) and says whether more follow', () => {
    const state = new WhitelistState();
    applyNew(
      state,
      'b1',
      ['0x05', '0x01', '0x0A', '0x03', '0x0b'].map((entry) => add('user', entry)),
    );
    assert.deepEqual(state.page('user', undefined, 2), { entries: ['0x01', '0x03'], more: true });
    assert.deepEqual(state.page('user', '0x03', 2), { entries: ['0x05', '0x0A'], more: true });
    assert.deepEqual(state.page('user', '0x04', 2), { entries: ['0x05', '0x0A'], more: true });
    assert.deepEqual(state.page('user', '0x0a', 2), { entries: ['0x0b'], more: false });
    assert.deepEqual(state.page('user', '0x0b', 2), { entries: [], more: false });
    applyNew(state, 'b2', [remove('user', '0x05'), add('user', '0x02')]);
    assert.deepEqual(state.page('user', '0x01', 2), { entries: ['0x02', '0x03'], more: true }, 'the sorted copy follows changes');
    assert.equal(state.has('user', '0x0A'), true);
    assert.equal(state.has('user', '0x0a'), false);
  });

  it('when a batchId repeats with the same changes, then the first record comes back unchanged', () => {
    const state = new WhitelistState();
    applyNew(state, 'b1', [add('user', 'a')]);
    applyNew(state, 'b2', [remove('user', 'a')]);
    const plan: ApplyPlan = state.plan('b1', [add('user', 'a')]);
    assert.equal(plan.type, 'repeat');
    assert.deepEqual(toApplyResponse(plan.record), {
      batchId: 'b1',
      results: [{ kind: 'user', entry: 'a', op_type: 'add_entry', changed: true }],
    });
    assert.deepEqual(state.entries('user'), []);
  });

  it('when a batchId repeats with other changes, then the plan is a conflict', () => {
    const state = new WhitelistState();
    applyNew(state, 'b1', [add('user', 'a'), add('user', 'b')]);
    for (const changes of [
      [add('user', 'b'), add('user', 'a')],
      [add('user', 'a')],
      [add('user', 'a'), add('developer', 'b')],
      [add('user', 'a'), remove('user', 'b')],
    ]) {
      assert.equal(state.plan('b1', changes).type, 'conflict');
    }
  });

  it('when more batches arrive than it remembers, then the oldest batchIds are forgotten first', () => {
    const state = new WhitelistState(2);
    applyNew(state, 'b1', [add('user', 'a')]);
    applyNew(state, 'b2', [add('user', 'b')]);
    applyNew(state, 'b3', [add('user', 'c')]);
    assert.deepEqual(
      ['b1', 'b2', 'b3'].map((id) => state.remembers(id)),
      [false, true, true],
    );
    assert.equal(state.plan('b1', [add('user', 'a')]).type, 'new');
  });

  it('when the state is copied to an image and back, then entries and remembered batches survive', () => {
    const state = new WhitelistState();
    applyNew(state, 'b1', [add('user', 'a'), add('developer', 'd')]);
    applyNew(state, 'b2', [remove('user', 'a'), add('user', 'b')]);
    const copy = WhitelistState.fromImage(JSON.parse(JSON.stringify(state.toImage())));
    assert.deepEqual(copy.toImage(), state.toImage());
    assert.equal(copy.plan('b1', [add('user', 'a'), add('developer', 'd')]).type, 'repeat');
  });

  it('when an image holds more batches than remembered, then only the newest are kept', () => {
    const state = new WhitelistState();
    for (const id of ['b1', 'b2', 'b3']) applyNew(state, id, [add('user', id)]);
    const copy = WhitelistState.fromImage(state.toImage(), 2);
    assert.deepEqual(
      copy.toImage().batches.map((batch) => batch.batchId),
      ['b2', 'b3'],
    );
  });

  it('when the remembered-batch bound is not a positive integer, then construction fails', () => {
    assert.throws(() => new WhitelistState(0), RangeError);
  });
});
