import assert from 'node:assert/strict';
import fc from 'fast-check';
import { admittedOpenRuns, maySlot, type SlotState } from '../../domain/worker-capacity';

describe('capacity that grows with the workers', () => {
  it('when no worker is live, then nothing is admitted; one worker admits its own bound', () => {
    assert.equal(admittedOpenRuns([]), 0);
    assert.equal(admittedOpenRuns([{ openRuns: 36 }]), 36);
  });

  it('when several workers are live, then what is admitted fits on the others if any one of them dies', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 10_000 }), { minLength: 2, maxLength: 12 }), (bounds) => {
        const admitted = admittedOpenRuns(bounds.map((openRuns) => ({ openRuns })));
        for (let dead = 0; dead < bounds.length; dead++) {
          const left = bounds.reduce((sum, b, i) => (i === dead ? sum : sum + b), 0);
          assert.ok(admitted <= left, `${admitted} admitted, ${left} left when worker ${dead} of ${bounds.join(',')} dies`);
        }
        // and no more is held back than that: the largest one's death leaves exactly what is admitted
        assert.equal(admitted, bounds.reduce((a, b) => a + b, 0) - Math.max(...bounds));
      }),
    );
  });

  it('when slots are handed out one by one and tasks bring new runs, then the cache never passes the bound and sticky slots are never held back for it', () => {
    // A model of a worker: any sequence of reservations, new runs (a non-sticky slot used for a run
    // not cached), releases and evictions; the gate is asked before each reservation.
    const step = fc.oneof(
      fc.constant({ kind: 'reserve', sticky: true } as const),
      fc.constant({ kind: 'reserve', sticky: false } as const),
      fc.constant({ kind: 'new-run-and-release' } as const),
      fc.constant({ kind: 'release', sticky: true } as const),
      fc.constant({ kind: 'evict' } as const),
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 1, max: 10 }),
        fc.array(step, { maxLength: 300 }),
        (openRuns, concurrent, steps) => {
          const state: SlotState = { sticky: 0, nonSticky: 0, cached: 0 };
          const limits = { concurrent, openRuns };
          for (const s of steps) {
            if (s.kind === 'reserve') {
              const allowed = maySlot(s.sticky, state, limits);
              if (s.sticky) assert.equal(allowed, state.sticky + state.nonSticky < concurrent, 'a sticky slot waits only for concurrency');
              if (allowed && s.sticky) state.sticky++;
              else if (allowed) state.nonSticky++;
            } else if (s.kind === 'new-run-and-release' && state.nonSticky > 0) {
              state.cached++; // the run is created while its task holds the slot
              assert.ok(state.cached <= openRuns, `cache ${state.cached} past the bound ${openRuns}`);
              state.nonSticky--;
            } else if (s.kind === 'release' && state.sticky > 0) state.sticky--;
            else if (s.kind === 'evict' && state.cached > 0) state.cached--;
            assert.ok(state.sticky + state.nonSticky <= concurrent);
          }
        },
      ),
    );
  });
});
