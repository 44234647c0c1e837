import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { projectRoot } from '../../config/config';
import type { ProcessStack } from './process-stack';

const run = promisify(execFile);

/**
 * Runs `npm run reconcile -- --chain CHAIN` (its script) with the stack's settings; answers its exit
 * code and its JSON lines (the summary first), or its standard error when it printed none.
 */
export function runReconcile(stack: ProcessStack, chain: string): Promise<{ code: number; lines: Array<Record<string, any>> }> {
  const parse = (stdout: string) =>
    stdout
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, any>);
  return run(process.execPath, [path.join(projectRoot, 'dist', 'scripts', 'reconcile.js'), '--chain', chain], {
    env: stack.env(),
    encoding: 'utf8',
  }).then(
    ({ stdout }) => ({ code: 0, lines: parse(stdout) }),
    (err: { code: number; stdout: string; stderr: string }) => ({
      code: err.code,
      lines: err.stdout.trim() ? parse(err.stdout) : [{ stderr: err.stderr }],
    }),
  );
}
