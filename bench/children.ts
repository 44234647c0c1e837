import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { stopChildProcess } from '../scripts/lib/child-service';

/** A Node process the bench started, its output going to a log file (never to a pipe that could fill up). */
export interface BenchChild {
  readonly name: string;
  readonly pid: number;
  readonly child: ChildProcess;
  readonly logFile: string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once it has exited. */
  stop(graceMs?: number): Promise<void>;
}

const live = new Set<ChildProcess>();

/**
 * Last line of defence against orphans: whatever is still running when the bench process exits
 * (an uncaught error, process.exit) gets a SIGKILL. The orderly path is BenchStack.stop().
 */
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/** Registers any child (the Temporal dev server, storage nodes) for the exit-time SIGKILL. */
export function track(child: ChildProcess): void {
  if (child.exitCode !== null || child.signalCode !== null) return;
  live.add(child);
  child.once('exit', () => live.delete(child));
}

/**
 * Starts `node <script>` with its stdout and stderr appended to `logFile`, and resolves once a line
 * of that file matches `readyPattern` (the file is polled: the bench reads no child pipe, so a
 * chatty child costs the load generator nothing).
 */
export async function startNodeChild(
  name: string,
  script: string,
  options: { env: NodeJS.ProcessEnv; logFile: string; readyPattern: RegExp; nodeArgs?: string[]; readyTimeoutMs?: number },
): Promise<BenchChild> {
  const fd = openSync(options.logFile, 'a');
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), script], { stdio: ['ignore', fd, fd], env: options.env });
  closeSync(fd);
  track(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = (graceMs = 10_000) => stopChildProcess(child, exited, graceMs);
  const deadline = Date.now() + (options.readyTimeoutMs ?? 60_000);
  for (;;) {
    const text = readFileSync(options.logFile, 'utf8');
    if (options.readyPattern.test(text)) break;
    const tail = () => text.split('\n').slice(-15).join('\n');
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${name} exited before it was ready:\n${tail()}`);
    if (Date.now() > deadline) {
      await stop(1000);
      throw new Error(`${name} not ready in time:\n${tail()}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { name, pid: child.pid!, child, logFile: options.logFile, stop };
}
