import { appendFileSync } from 'node:fs';
import Mocha from 'mocha';
import { testSettings } from './settings';

/**
 * Mocha's spec reporter, followed at the end of a run by the ten test files that took longest
 * (wall time of each file's top-level suites, their before/after hooks included: a file that
 * starts its own process stack pays for it here). This is where to look first when `npm test`
 * grows slower. Under the suite runner (test/run-suite.ts, TEST_FILE_TIMES set) each file's time is
 * appended to that file instead, and the runner prints the slowest of the whole run.
 */
class TimedSpecReporter extends Mocha.reporters.Spec {
  constructor(runner: Mocha.Runner, options?: Mocha.MochaOptions) {
    super(runner, options);
    const started = new Map<Mocha.Suite, number>();
    const perFile = new Map<string, number>();
    runner.on(Mocha.Runner.constants.EVENT_SUITE_BEGIN, (suite: Mocha.Suite) => {
      if (suite.parent?.root) started.set(suite, Date.now());
    });
    runner.on(Mocha.Runner.constants.EVENT_SUITE_END, (suite: Mocha.Suite) => {
      const start = started.get(suite);
      if (start === undefined) return;
      const file = suite.file ?? suite.title;
      perFile.set(file, (perFile.get(file) ?? 0) + Date.now() - start);
    });
    runner.once(Mocha.Runner.constants.EVENT_RUN_END, () => {
      const timesFile = testSettings().TEST_FILE_TIMES;
      if (timesFile) {
        appendFileSync(timesFile, [...perFile].map(([file, ms]) => `${JSON.stringify({ file, ms })}\n`).join(''));
        return;
      }
      if (perFile.size < 2) return;
      const slowest = [...perFile].sort((a, b) => b[1] - a[1]).slice(0, 10);
      const total = [...perFile.values()].reduce((a, b) => a + b, 0);
      console.log(`\n  slowest test files (of ${perFile.size}, ${(total / 1000).toFixed(0)} s in all):`);
      for (const [file, ms] of slowest) console.log(`  ${(ms / 1000).toFixed(1).padStart(7)} s  ${file.replace(/^.*?dist\//, '')}`);
    });
  }
}

export = TimedSpecReporter;
