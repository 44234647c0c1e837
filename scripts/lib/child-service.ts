import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { createInterface } from 'node:readline';
import { childEnv } from '../../config/child-env';

export interface ChildService {
  readonly name: string;
  readonly child: ChildProcess;
  /** Resolves with the first stdout line matching `readyPattern`; rejects if the process exits first. */
  readonly ready: Promise<RegExpExecArray>;
  /** Resolves with the exit code (or signal name) once the process has exited. */
  readonly exited: Promise<number | string>;
  /** SIGTERM (or `signal`), then SIGKILL after `graceMs`. */
  stop(graceMs?: number, signal?: NodeJS.Signals): Promise<void>;
}

/** Set by startChildrenInOwnProcessGroups; the children it applies to that are still running. */
let ownGroups = false;
const running = new Set<ChildProcess>();

/**
 * From now on every child this process starts (spawnChild, startChildService) gets a process
 * group of its own, so a terminal's Ctrl-C, which signals the whole foreground group, reaches this
 * process alone and it stops the children in its own order. Such a child outlives a parent that
 * dies, so the ones still running are killed when this process exits (any exit but SIGKILL).
 */
export function startChildrenInOwnProcessGroups(): void {
  if (ownGroups) return;
  ownGroups = true;
  process.on('exit', () => {
    for (const child of running) child.kill('SIGKILL');
  });
}

/** child_process.spawn, in a process group of its own after startChildrenInOwnProcessGroups. */
export function spawnChild(command: string, args: readonly string[], options: SpawnOptions): ChildProcess {
  const child = spawn(command, args, { ...options, detached: ownGroups });
  if (ownGroups) {
    running.add(child);
    child.once('exit', () => running.delete(child));
  }
  return child;
}

/**
 * Stops `child`: `signal` (SIGTERM by default), then SIGKILL if it has not exited after `graceMs`;
 * resolves once `exited` (the child's own exit promise) has. A child that has exited already is left alone.
 */
export async function stopChildProcess(
  child: ChildProcess,
  exited: Promise<unknown>,
  graceMs: number,
  signal: NodeJS.Signals = 'SIGTERM',
): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/**
 * Runs a long-lived child process, echoing its output with a `[name]` prefix (or dropping it), and
 * tells when it is ready by watching its stdout for a line.
 */
export function startChildService(
  name: string,
  command: string,
  args: string[],
  options: {
    readyPattern: RegExp;
    env?: NodeJS.ProcessEnv;
    echo?: boolean;
    readyTimeoutMs?: number;
    spawnOptions?: { uid?: number; gid?: number; cwd?: string };
    /** Hears every line of its stdout and stderr (a test that reads a whole run's log). */
    onLine?: (line: string) => void;
  },
): ChildService {
  const child = spawnChild(command, args, { ...options.spawnOptions, stdio: ['ignore', 'pipe', 'pipe'], env: options.env ?? childEnv() });
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')));
  const echo = options.echo ?? true;
  const tail: string[] = [];
  const ready = new Promise<RegExpExecArray>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${name} not ready after ${options.readyTimeoutMs ?? 60_000} ms`)),
      options.readyTimeoutMs ?? 60_000,
    );
    const watch = (stream: NodeJS.ReadableStream) =>
      createInterface({ input: stream }).on('line', (line) => {
        tail.push(line);
        if (tail.length > 20) tail.shift();
        if (echo) process.stdout.write(`[${name}] ${line}\n`);
        options.onLine?.(line);
        const match = options.readyPattern.exec(line);
        if (match) {
          clearTimeout(timer);
          resolve(match);
        }
      });
    watch(child.stdout!);
    watch(child.stderr!);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${code}) before it was ready:\n${tail.join('\n')}`));
    });
  });
  ready.catch(() => undefined);
  return {
    name,
    child,
    ready,
    exited,
    stop: (graceMs = 10_000, signal: NodeJS.Signals = 'SIGTERM') => stopChildProcess(child, exited, graceMs, signal),
  };
}
