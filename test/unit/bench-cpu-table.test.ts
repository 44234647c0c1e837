import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../config/config';
import type { BenchResults } from '../../bench/results';
import { renderTables } from '../../bench/table';

describe('bench: case 1 CPU per Update by process', () => {
  const committed = JSON.parse(readFileSync(path.join(projectRoot, 'bench/results.json'), 'utf8')) as BenchResults;
  const cpu = {
    floorSearchAttribute: { serverMs: 9.17, workerMs: 4.43, apiMs: 0.1 },
    floorClose: { serverMs: 12.17, workerMs: 6.2, apiMs: 0.07 },
    direct: { serverMs: 12.87, workerMs: 7.4, apiMs: 0 },
    api: { serverMs: 13.3, workerMs: 7.8, apiMs: 4.47 },
  };
  const withCpu = (r: BenchResults): BenchResults => ({
    ...r,
    curve: undefined,
    phases: r.phases.map((p) => ({ ...p, submit: p.submit.map((s) => ({ ...s, cpu })) })),
  });

  it('when a run read the CPU times, then each side has its row: server, worker, the API only for the API side, and their total', () => {
    const out = renderTables(withCpu(committed));
    const rows = out.split('\n').filter((l) => /^\| 1 \| 10 \| (floor|execution)/.test(l));
    assert.deepEqual(rows, [
      '| 1 | 10 | floor + search attribute | 9.17 | 4.43 | - | 13.6 |',
      '| 1 | 10 | floor + search attribute + close | 12.17 | 6.2 | - | 18.4 |',
      '| 1 | 10 | execution, direct | 12.87 | 7.4 | - | 20.3 |',
      '| 1 | 10 | execution through the API | 13.3 | 7.8 | 4.47 | 25.6 |',
    ]);
    assert.match(out, /CPU ms per Update by process/);
  });

  it('when a run has no CPU times (older results), then no CPU table is rendered', () => {
    const withoutCpu: BenchResults = {
      ...committed,
      curve: undefined,
      phases: committed.phases.map((p) => ({ ...p, submit: p.submit.map(({ cpu: _cpu, ...s }) => s) })),
    };
    assert.doesNotMatch(renderTables(withoutCpu), /CPU ms per Update by process/);
    assert.match(renderTables(withCpu(committed)), /CPU ms per Update by process/);
  });
});
