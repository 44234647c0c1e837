import { parseArgs } from 'node:util';
import { runCachePressure } from './lib/stress/cache-pressure';
import { reportLines, reportTable } from './lib/stress/report';

/**
 * `npm run stress -- [--executions N] [--cache C] [--linger S] [--minutes M] [--rate-factor F] [--pending-share P]
 * [--protection on|off] [--prepare-share S] [--workers W] [--kill-worker]`: the long form of test/load/stress.test.ts.
 * One run of W workers (default 1) with a cache of C each, N executions meant to be open and M minutes of load at F
 * times the saturating rate, S of it prepares of new executions; with protection on (the default) each worker takes
 * at most 0.9 × C open runs (WORKER_OPEN_RUNS, as the defaults) and the API admits the live workers' sum less the
 * largest; off, the API admits everything and the workers take every run (the control run). `--kill-worker`
 * SIGKILLs the last worker halfway through the load. Prints the run and a table row.
 */
async function main() {
  const { values } = parseArgs({
    options: {
      executions: { type: 'string', default: '400' },
      cache: { type: 'string', default: '40' },
      linger: { type: 'string', default: '0' },
      minutes: { type: 'string', default: '2' },
      'rate-factor': { type: 'string', default: '2' },
      'pending-share': { type: 'string', default: '0.5' },
      protection: { type: 'string', default: 'on' },
      'prepare-share': { type: 'string', default: '0.1' },
      workers: { type: 'string', default: '1' },
      'kill-worker': { type: 'boolean', default: false },
    },
  });
  const number = (name: keyof typeof values) => {
    const n = Number(values[name]);
    if (!Number.isFinite(n) || n < 0) throw new Error(`--${name} must be a number >= 0, not ${values[name]}`);
    return n;
  };
  const report = await runCachePressure({
    executions: Math.round(number('executions')),
    cache: Math.round(number('cache')),
    lingerSeconds: Math.round(number('linger')),
    seconds: Math.round(number('minutes') * 60),
    rateFactor: number('rate-factor'),
    pendingShare: number('pending-share'),
    // The defaults' ratio (WORKER_OPEN_RUNS 360 of WORKER_CACHED_WORKFLOWS 400); off: the control run.
    ...(protection(values.protection) ? { workerOpenRuns: Math.floor(0.9 * Math.round(number('cache'))) } : {}),
    workers: Math.max(1, Math.round(number('workers'))),
    killWorker: values['kill-worker'] === true,
    prepareShare: number('prepare-share'),
    log: (line) => console.log(`[stress] ${line}`),
  });
  console.log(reportLines(report).join('\n'));
  console.log(`\n${reportTable([report])}`);
  process.exitCode = report.stranded > 0 ? 1 : 0;
}

function protection(value: string | undefined): boolean {
  if (value !== 'on' && value !== 'off') throw new Error(`--protection must be on or off, not ${value}`);
  return value === 'on';
}

main().catch((err) => {
  console.error('stress failed:', err);
  process.exit(1);
});
