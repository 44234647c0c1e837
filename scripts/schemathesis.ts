// `npm run schemathesis`: the pinned Schemathesis (scripts/schemathesis.sh installs it) against a
// stack of real processes on free ports (Temporal dev server, storage nodes, worker, API), with a
// token of every scope: every check, a fixed seed, the phases from the document's examples to its
// links. On demand only, never in `npm test`. Exits with Schemathesis's status; its JUnit report is
// written to test-results/schemathesis/.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { projectRoot } from '../config/project-root';
import { ProcessStack } from './lib/stack/process-stack';

const SEED = '70';

async function main(): Promise<number> {
  const [st, ...rest] = process.argv.slice(2);
  if (!st) throw new Error('usage: node dist/scripts/schemathesis.js <path of the st binary> [--config-file FILE] [st run options…]');
  // `--config-file` is an option of `st` itself, given before `run`.
  const config = rest[0] === '--config-file' ? rest.splice(0, 2) : [];
  const stack = new ProcessStack();
  await stack.start();
  try {
    const run = spawnSync(
      st,
      [
        ...config,
        'run',
        `${stack.apiUrl}/openapi.json`,
        '--checks',
        'all',
        '--seed',
        SEED,
        '--generation-deterministic',
        '--phases',
        'examples,coverage,fuzzing,stateful',
        '--header',
        `Authorization: Bearer ${stack.token}`,
        '--report',
        'junit',
        '--report-dir',
        path.join(projectRoot, 'test-results', 'schemathesis'),
        ...rest,
      ],
      { stdio: 'inherit' },
    );
    return run.status ?? 1;
  } finally {
    await stack.stop();
  }
}

main().then(
  (status) => process.exit(status),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
