import assert from 'node:assert/strict';
import { runCachePressure, type CachePressureReport } from '../stress/cache-pressure';
import { reportLines } from '../stress/report';

// A short form of `npm run stress`: a worker whose sticky cache holds 10 workflows, 100 executions
// open at once (each closes at its final status, EXECUTION_LINGER_S as deployed), and Updates,
// queries, signals and expiry timers at twice the saturating rate, so that tasks wait for a cache
// slot and Update tasks time out: the Temporal core's wedge path (decision 0075). Nothing may strand:
// a run the core wedges is released by the worker recreating itself.

describe('stress: a full sticky cache under overload (worker and API as processes)', function () {
  this.timeout(240_000);
  let report: CachePressureReport;

  before(async function () {
    this.timeout(240_000);
    report = await runCachePressure({ executions: 100, cache: 10, lingerSeconds: 0, seconds: 15 });
    console.log(reportLines(report).join('\n'));
  });

  it('when more executions are open than the cache holds and the load is above saturation, then the cache is full and no workflow task is stuck retrying', () => {
    assert.ok(report.worker.cachePeak >= 10, `the cache was full (peak ${report.worker.cachePeak})`);
    assert.deepEqual(report.wedged, [], 'no workflow task at attempt >= 3 after the load');
  });

  it('when the core logged that it wedged a run, then the worker heard each line and recreated itself (the count may be 0: the wedge is a race)', () => {
    assert.equal(report.worker.recreated, report.worker.coreLines.extraBufferedRun);
  });

  it('when the worker recreates itself under that load, then no answer is a 500 (a query no worker can take is a 503)', () => {
    assert.deepEqual(report.apiErrors, {});
  });

  it('when an action was acknowledged under that load, then the record shows it within 60 s', () => {
    assert.deepEqual(report.invisible, []);
  });
});
