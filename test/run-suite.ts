import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { createInterface } from 'node:readline';
import path from 'node:path';
import { childEnv } from '../config/child-env';
import { projectRoot } from '../config/config';
import { planBuiltSuite } from './support/suite-plan';

/**
 * `npm test` after lint: the whole suite, as `mocha` alone would run it, in two lanes of mocha
 * processes at once and then the load tests alone (test/support/suite-plan.ts says why and which).
 * Each line a lane prints starts with its number (`L` for the load tests); each mocha process ends
 * with its own summary and failures. At the end: when each job ran, the ten slowest test files of
 * the whole run, the start of each failed process's failure report again (so that the end of the
 * log says what failed), and the exit code 1 if any process failed. Every job runs even after a failure, so
 * that one run shows every failure.
 */

const MOCHA = path.join(projectRoot, 'node_modules', 'mocha', 'bin', 'mocha.js');

interface Outcome {
  /** What ran: a job's test file, or how many files of the shared stack. */
  name: string;
  lane: string;
  code: number;
  /** Seconds since the suite started. */
  from: number;
  to: number;
  /** The first lines of its failure report (mocha's "N failing" and what follows), for the summary. */
  failures: string[];
}

/** How many lines of each failed process's failure report the summary repeats. */
const FAILURE_LINES = 60;

/** One mocha process of `files`, its lines prefixed with its lane; `from` and `to` counted from `suiteStart`. */
function runMocha(files: string[], lane: string, env: NodeJS.ProcessEnv, suiteStart: number): Promise<Outcome> {
  const name = files.length === 1 ? path.relative(projectRoot, files[0]) : `${files.length} files of the shared stack`;
  const from = (Date.now() - suiteStart) / 1000;
  const prefix = `${lane}│ `;
  const child = spawn(process.execPath, [MOCHA, ...files], { cwd: projectRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const failures: string[] = [];
  let inReport = false;
  const relay = (stream: NodeJS.ReadableStream, out: NodeJS.WriteStream) =>
    createInterface({ input: stream }).on('line', (line) => {
      out.write(`${prefix}${line}\n`);
      // eslint-disable-next-line no-control-regex
      const plain = line.replace(/\x1b\[[0-9;]*m/g, '');
      if (/^\s*\d+ failing\s*$/.test(plain)) inReport = true;
      if (inReport && failures.length < FAILURE_LINES) failures.push(plain);
    });
  relay(child.stdout, process.stdout);
  relay(child.stderr, process.stderr);
  return new Promise((resolve) =>
    child.on('close', (code, signal) =>
      resolve({ name, lane, code: code ?? (signal ? 1 : 0), from, to: (Date.now() - suiteStart) / 1000, failures }),
    ),
  );
}

async function main(): Promise<number> {
  const started = Date.now();
  const plan = planBuiltSuite(path.join(projectRoot, 'dist', 'test'));
  const work = mkdtempSync(path.join(os.tmpdir(), 'intent-service-suite-'));
  const timesFile = path.join(work, 'file-times.jsonl');
  const env = childEnv({ TEST_WORKFLOW_BUNDLE_DIR: work, TEST_FILE_TIMES: timesFile });
  const files = plan.parallel.flat().length + plan.alone.length;
  console.log(`suite: ${files} test files; ${plan.parallel.length} jobs in two lanes at once, then ${plan.alone.length} load files alone`);
  const outcomes: Outcome[] = [];
  try {
    const queue = [...plan.parallel];
    const lane = async (n: number) => {
      for (let job = queue.shift(); job; job = queue.shift()) outcomes.push(await runMocha(job, String(n), env, started));
    };
    await Promise.all([lane(1), lane(2)]);
    if (plan.alone.length > 0) outcomes.push(await runMocha(plan.alone, 'L', env, started));

    const times = readFileSync(timesFile, 'utf8')
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { file: string; ms: number });
    const slowest = times.sort((a, b) => b.ms - a.ms).slice(0, 10);
    const failed = outcomes.filter((o) => o.code !== 0);
    console.log(`\nsuite: ${files} test files in ${((Date.now() - started) / 1000).toFixed(0)} s of wall time; when each job ran (s):`);
    for (const o of [...outcomes].sort((a, b) => a.lane.localeCompare(b.lane) || a.from - b.from))
      console.log(`  ${o.lane.padStart(4)}  ${o.from.toFixed(0).padStart(4)}–${o.to.toFixed(0).padEnd(4)} ${o.name}`);
    console.log('suite: slowest files:');
    for (const t of slowest)
      console.log(`  ${(t.ms / 1000).toFixed(1).padStart(7)} s  ${path.relative(path.join(projectRoot, 'dist'), t.file)}`);
    for (const o of failed) {
      console.log(`suite: FAILED (exit ${o.code}): ${o.name}`);
      for (const line of o.failures) console.log(`  ${o.lane}│ ${line}`);
    }
    if (failed.length === 0) console.log(`suite: every mocha process passed`);
    return failed.length === 0 ? 0 : 1;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
