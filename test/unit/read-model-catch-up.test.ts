import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { ExecutionStatus } from '../../domain/execution-state';
import { catchUpPlan, type RunningExecution } from '../../worker/read-model-catch-up';

const cutoff = new Date('2026-11-27T03:00:00.000Z');
const before = new Date(cutoff.getTime() - 1000);
const after = new Date(cutoff.getTime() + 1000);

describe('read model catch-up: which records a pass fetches', () => {
  it('when a row shows the status visibility shows, then nothing is fetched; another status is queried; a row of a run not listed running is described', () => {
    const running = new Map<string, RunningExecution>([
      ['same', { state: 'PREPARED', startedAt: before }],
      ['moved', { state: 'OPERATION_PENDING', startedAt: before }],
      ['unindexed', { startedAt: before }],
    ]);
    const plan = catchUpPlan(
      [
        { workflowId: 'same', status: 'PREPARED' },
        { workflowId: 'moved', status: 'PREPARED' },
        { workflowId: 'unindexed', status: 'PREPARED' },
        { workflowId: 'closed', status: 'OPERATION_PENDING' },
      ],
      running,
      () => true,
      cutoff,
    );
    assert.deepEqual(plan, { query: ['moved'], describe: ['closed'] });
  });

  it('when a running execution has no row, then it is queried once it is older than the cutoff, not before (its prepare may be writing it)', () => {
    const running = new Map<string, RunningExecution>([
      ['old', { state: 'PREPARED', startedAt: before }],
      ['young', { state: 'PREPARED', startedAt: after }],
    ]);
    assert.deepEqual(
      catchUpPlan([], running, () => false, cutoff),
      { query: ['old'], describe: [] },
    );
  });

  it('for any rows and runs, every row whose status differs from its running state, and every old running execution without a row, is fetched exactly once; no row that agrees is', () => {
    const status = fc.constantFrom<ExecutionStatus>('PREPARED', 'OPERATION_PENDING');
    const state = fc.option(fc.constantFrom('PREPARED', 'OPERATION_PENDING', 'SIGNING', 'CANCELLED', 'EXPIRED'), { nil: undefined });
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.record({ workflowId: fc.constantFrom('a', 'b', 'c', 'd', 'e'), status }), { selector: (r) => r.workflowId }),
        fc.dictionary(fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f', 'g'), fc.record({ state, old: fc.boolean() })),
        (rows, runs) => {
          const running = new Map(Object.entries(runs).map(([id, r]) => [id, { state: r.state, startedAt: r.old ? before : after }]));
          const hasRow = (id: string) => rows.some((r) => r.workflowId === id);
          const plan = catchUpPlan(rows, running, hasRow, cutoff);
          const fetched = [...plan.query, ...plan.describe];
          assert.equal(new Set(fetched).size, fetched.length);
          for (const row of rows) {
            const run = running.get(row.workflowId);
            const expected = run === undefined || (run.state !== undefined && run.state !== row.status);
            assert.equal(fetched.includes(row.workflowId), expected, JSON.stringify({ row, run }));
          }
          for (const [id, run] of running)
            if (!hasRow(id)) assert.equal(plan.query.includes(id), run.startedAt < cutoff, JSON.stringify({ id, run }));
        },
      ),
    );
  });
});
