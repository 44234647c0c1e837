import assert from 'node:assert/strict';
import fc from 'fast-check';
import { applyChange, emptyHistory, isPresent, revertChange, type EntryHistory } from '../../storage-node/entry-order';
import type { WhitelistKind } from '../../contracts/storage-node-protocol';
import { scheduleArbitrary, sequentialOutcome, type Schedule } from '../support/batch-schedules';

const ENTRIES = ['0x1111111111111111111111111111111111111111', '0x2222222222222222222222222222222222222222'];

/** Plays a schedule against the pure per-entry rule, as a node's store does, and returns the sets. */
function play(schedule: Schedule, keep?: number): { sets: Record<WhitelistKind, string[]>; longest: number } {
  const histories = new Map<string, EntryHistory>();
  let longest = 0;
  for (const { batch, revert } of schedule.deliveries) {
    const { batchId, position, changes } = schedule.batches[batch];
    changes.forEach((c, index) => {
      const key = `${c.kind}:${c.entry}`;
      const step = revert ? revertChange : applyChange;
      const { history } = step(histories.get(key) ?? emptyHistory(), { position, batchId, index }, c.op_type, keep);
      histories.set(key, history);
      longest = Math.max(longest, history.changes.length);
    });
  }
  const sets: Record<WhitelistKind, string[]> = { developer: [], user: [] };
  for (const [key, history] of histories) {
    const [kind, entry] = key.split(':') as [WhitelistKind, string];
    if (isPresent(history)) sets[kind].push(entry);
  }
  return { sets: { developer: sets.developer.sort(), user: sets.user.sort() }, longest };
}

const at = (position: number, batchId: string, index = 0) => ({ position, batchId, index });

describe('entry order: the last accepted change wins', () => {
  it('when batches arrive late, twice, reverted before or after their apply, in any interleaving, then the sets equal the accepted batches applied in their order', () => {
    fc.assert(
      fc.property(scheduleArbitrary(ENTRIES), (schedule) => {
        assert.deepEqual(play(schedule).sets, sequentialOutcome(schedule.batches));
      }),
      { numRuns: 2000 },
    );
  });

  it('when an entry sees more changes than it keeps, then its history stays bounded', () => {
    fc.assert(
      fc.property(scheduleArbitrary(ENTRIES, 12), (schedule) => {
        assert.ok(play(schedule, 3).longest <= 3);
      }),
      { numRuns: 300 },
    );
  });

  it('when an older add arrives after a newer remove, then it is superseded and the entry stays removed', () => {
    const removed = applyChange(emptyHistory(), at(2, 'b'), 'remove_entry').history;
    const late = applyChange(removed, at(1, 'a'), 'add_entry');
    assert.deepEqual(late.verdict, { changed: false, superseded: true });
    assert.equal(isPresent(late.history), false);
  });

  it('when a change is delivered again, then it answers what its first delivery answered and changes nothing', () => {
    const first = applyChange(emptyHistory(), at(1, 'a'), 'add_entry');
    assert.deepEqual(first.verdict, { changed: true, superseded: false });
    const again = applyChange(first.history, at(1, 'a'), 'add_entry');
    assert.deepEqual(again.verdict, first.verdict);
    assert.deepEqual(again.history, first.history);
  });

  it('when a newer batch is reverted, then the older change it had superseded decides the entry again', () => {
    let history = applyChange(emptyHistory(), at(2, 'b'), 'add_entry').history;
    history = applyChange(history, at(1, 'a'), 'remove_entry').history;
    assert.equal(isPresent(history), true);
    const undone = revertChange(history, at(2, 'b'), 'add_entry');
    assert.deepEqual(undone.verdict, { changed: true, superseded: false });
    assert.equal(isPresent(undone.history), false);
  });

  it('when a revert comes before its change, then the change arriving late is not applied', () => {
    const marked = revertChange(emptyHistory(), at(1, 'a'), 'add_entry').history;
    const late = applyChange(marked, at(1, 'a'), 'add_entry');
    assert.deepEqual(late.verdict, { changed: false, superseded: true });
    assert.equal(isPresent(late.history), false);
  });

  it('when older changes fold into the base, then a change older than the base is superseded', () => {
    let history = emptyHistory();
    for (let p = 1; p <= 4; p++) history = applyChange(history, at(p, `b${p}`), p % 2 ? 'add_entry' : 'remove_entry', 2).history;
    assert.equal(history.changes.length, 2);
    assert.deepEqual(history.base.order, at(2, 'b2'));
    assert.deepEqual(applyChange(history, at(1, 'b0'), 'add_entry', 2).verdict, { changed: false, superseded: true });
  });
});
