import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  applyChange,
  covers,
  DEFAULT_KEPT_CHANGES,
  emptyHistory,
  isPresent,
  mergeAll,
  mergeHistories,
  revertChange,
  type EntryHistory,
} from '../../domain/entry-order';
import type { OpType, WhitelistKind } from '../../contracts/storage-node-protocol';
import { scheduleArbitrary, sequentialOutcome, type Schedule } from '../support/batch-schedules';

const ENTRIES = ['0x1111111111111111111111111111111111111111', '0x2222222222222222222222222222222222222222'];

/** Plays a schedule against the pure per-entry rule, as a node's store does, and returns the sets. */
function play(schedule: Schedule, keep?: number): { sets: Record<WhitelistKind, string[]>; longest: number } {
  const { histories, longest } = historiesOf(schedule, keep);
  return { sets: setsOf(histories), longest };
}

/** The entries' histories after a schedule's deliveries, as one node keeps them. */
function historiesOf(schedule: Schedule, keep?: number): { histories: Map<string, EntryHistory>; longest: number } {
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
  return { histories, longest };
}

/** The whitelists the histories say. */
function setsOf(histories: Map<string, EntryHistory>): Record<WhitelistKind, string[]> {
  const sets: Record<WhitelistKind, string[]> = { developer: [], user: [] };
  for (const [key, history] of histories) {
    const [kind, entry] = key.split(':') as [WhitelistKind, string];
    if (isPresent(history)) sets[kind].push(entry);
  }
  return { developer: sets.developer.sort(), user: sets.user.sort() };
}

const at = (position: number, batchId: string, index = 0) => ({ position, batchId, index });

describe('entry order: the last accepted change wins', () => {
  it('when each delivery reaches any subset of three replicas (one of them wiped and refilled by merges), then merging the replicas gives what one node given every delivery that reached some replica holds, and a merge covers what it merged', () => {
    fc.assert(
      fc.property(
        scheduleArbitrary(ENTRIES).chain((schedule) =>
          fc.tuple(
            fc.constant(schedule),
            fc.array(fc.subarray([0, 1, 2]), { minLength: schedule.deliveries.length, maxLength: schedule.deliveries.length }),
          ),
        ),
        ([schedule, reach]) => {
          const replicas = [0, 1, 2].map(
            (r) => historiesOf({ ...schedule, deliveries: schedule.deliveries.filter((_, d) => reach[d].includes(r)) }).histories,
          );
          const reached = historiesOf({ ...schedule, deliveries: schedule.deliveries.filter((_, d) => reach[d].length > 0) }).histories;
          const keys = new Set(replicas.flatMap((h) => [...h.keys()]));
          const merged = new Map([...keys].map((k) => [k, mergeAll(replicas.map((h) => h.get(k) ?? emptyHistory()))]));
          assert.deepEqual(setsOf(merged), setsOf(reached));
          for (const [k, history] of merged) {
            for (const replica of replicas) assert.ok(covers(history, replica.get(k) ?? emptyHistory()), 'the merge holds every replica');
            assert.deepEqual(mergeHistories(history, history), history, 'merging again changes nothing');
            // A wiped replica refilled from the merge says the same.
            assert.equal(isPresent(mergeHistories(emptyHistory(), history)), isPresent(history));
          }
        },
      ),
      { numRuns: 2000 },
    );
  });

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

  it('when the winning add has more newer changes than the entry keeps, all reverted, then its own late revert still removes it', () => {
    let history = applyChange(emptyHistory(), at(1, 'winner'), 'add_entry').history;
    for (let p = 2; p <= 1 + DEFAULT_KEPT_CHANGES; p++) {
      history = applyChange(history, at(p, `failed-${p}`), p % 2 ? 'add_entry' : 'remove_entry').history;
      history = revertChange(history, at(p, `failed-${p}`), p % 2 ? 'add_entry' : 'remove_entry').history;
    }
    assert.equal(isPresent(history), true, 'the winner still decides the entry');
    const undone = revertChange(history, at(1, 'winner'), 'add_entry');
    assert.deepEqual(undone.verdict, { changed: true, superseded: false });
    assert.equal(isPresent(undone.history), false);
    assert.ok(undone.history.changes.length <= DEFAULT_KEPT_CHANGES);
  });

  it('when any number of newer changes to an entry are reverted (before or after they arrive), then a revert of the winner takes effect (an entry keeping two changes or more)', () => {
    const op = fc.constantFrom<OpType>('add_entry', 'remove_entry');
    const newer = fc.record({ op, revertFirst: fc.boolean() });
    fc.assert(
      // Two kept changes at least: one newer change may be live (applied, not yet reverted) beside the winner.
      fc.property(fc.integer({ min: 2, max: 5 }), op, op, fc.array(newer, { maxLength: 12 }), (keep, before, winnerOp, changes) => {
        // An older live change, then the winner, then newer changes that all fail.
        let history = applyChange(emptyHistory(), at(1, 'older'), before, keep).history;
        history = applyChange(history, at(2, 'winner'), winnerOp, keep).history;
        changes.forEach((c, i) => {
          const order = at(3 + i, `failed-${i}`);
          const steps = c.revertFirst ? [revertChange, applyChange] : [applyChange, revertChange];
          for (const step of steps) history = step(history, order, c.op, keep).history;
        });
        assert.equal(isPresent(history), winnerOp === 'add_entry');
        const undone = revertChange(history, at(2, 'winner'), winnerOp, keep).history;
        assert.equal(isPresent(undone), before === 'add_entry', 'back to what the older change made it');
        assert.ok(undone.changes.length <= keep);
      }),
      { numRuns: 1000 },
    );
  });
});
