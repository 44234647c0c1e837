import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/**
 * How `npm test` runs the suite in minutes on two cores: most tests wait (on timers, chains,
 * sweeps, processes starting), so two mocha processes at once share the machine well. One job runs
 * every file that uses the run's shared stack (or none) in one mocha process, as a plain `mocha`
 * would; each file that starts its own process stack (its own Temporal dev server, worker and API
 * as processes) is a job of its own, since it shares nothing with the others. Two lanes take the
 * jobs, the longest first. The load tests measure what this machine saturates at, so they run
 * last and alone.
 */
export interface SuitePlan {
  /** Jobs the two lanes share, longest expected first; each is the files of one mocha process. */
  parallel: string[][];
  /** Run after the lanes are done, one process, nothing else running. */
  alone: string[];
}

/** Every test file under `distTest` (dist/test), as mocha's `dist/test/** /*.test.js` finds them, sorted. */
export function testFiles(distTest: string): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith('.test.js')) found.push(full);
    }
  };
  walk(distTest);
  return found.sort();
}

/** Whether a compiled test file starts a process stack of its own: it constructs one, or calls the helper that does (as tsc emits them). */
export function startsOwnStack(source: string): boolean {
  return /new [\w$]+\.(ProcessStack|ClusterStack)\(|[\w$]+\.startFollowingStack\)\(/.test(source);
}

/** Whether a test file measures saturation and must run alone. */
export function runsAlone(file: string): boolean {
  return file.split(path.sep).includes('load');
}

/**
 * The plan for `files`: `source` reads a file's compiled code, `weight` says how long it is expected
 * to take (any unit; the runner uses the file's size), so that the longest jobs start first and
 * the lanes end close together.
 */
export function planSuite(files: readonly string[], source: (file: string) => string, weight: (file: string) => number): SuitePlan {
  const alone = files.filter(runsAlone);
  const rest = files.filter((f) => !runsAlone(f));
  const own = rest.filter((f) => startsOwnStack(source(f)));
  const shared = rest.filter((f) => !own.includes(f));
  const jobs = [...own.map((f) => [f]), ...(shared.length > 0 ? [shared] : [])];
  const jobWeight = (job: string[]) => job.reduce((n, f) => n + weight(f), 0);
  return { parallel: jobs.sort((a, b) => jobWeight(b) - jobWeight(a)), alone };
}

/** The plan of the built suite under `distTest`, each file weighed by its size. */
export function planBuiltSuite(distTest: string): SuitePlan {
  return planSuite(
    testFiles(distTest),
    (f) => readFileSync(f, 'utf8'),
    (f) => statSync(f).size,
  );
}
