import { closeSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';

/** How long a writer waits for another writer's lock before it gives up. */
const WAIT_MS = 10_000;
const STEP_MS = 20;

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

const sleepSync = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/**
 * Runs `fn` while holding `{file}.lock`, a file created exclusively (O_EXCL) that holds the
 * holder's pid, so that read-modify-write cycles of several processes on one file never interleave.
 * A lock whose holder has died is taken over. Throws after waiting 10 s for a live holder.
 */
export function withFileLock<T>(file: string, fn: () => T): T {
  const lock = `${file}.lock`;
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    let fd: number | undefined;
    try {
      fd = openSync(lock, 'wx', 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    if (fd !== undefined) {
      writeSync(fd, String(process.pid));
      closeSync(fd);
      break;
    }
    let holder = NaN;
    try {
      holder = Number(readFileSync(lock, 'utf8'));
    } catch {
      // Released (or not yet written) between our open and this read: try again.
    }
    if (Number.isInteger(holder) && holder > 0 && !alive(holder)) rmSync(lock, { force: true });
    else if (Date.now() > deadline) throw new Error(`${lock} is held by process ${holder}; try again`);
    else sleepSync(STEP_MS);
  }
  try {
    return fn();
  } finally {
    rmSync(lock, { force: true });
  }
}
