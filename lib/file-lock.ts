import { randomBytes } from 'node:crypto';
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

/** The file's text, or undefined when it is gone (or not yet written). */
function readQuiet(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** The pid a lock's text names (`pid nonce`; an older lock holds the pid alone), or NaN. */
const holderOf = (text: string | undefined) => Number((text ?? '').split(' ')[0]);

const isDead = (text: string | undefined) => {
  const pid = holderOf(text);
  return Number.isInteger(pid) && pid > 0 && !alive(pid);
};

/** Creates `file` exclusively with this process's `pid nonce`; false if it exists. */
function createExclusive(file: string, text: string): boolean {
  let fd: number;
  try {
    fd = openSync(file, 'wx', 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
  writeSync(fd, text);
  closeSync(fd);
  return true;
}

/**
 * Removes `lock` if it still holds `stale`, the very text judged to be a dead holder's. Takers take
 * `{lock}.takeover` (O_EXCL) around the re-read and the removal, so that no taker removes a lock
 * another taker's removal let a live writer create in the meantime: without it, two writers that
 * judged one stale lock could both win (the second removing the first's live lock). The nonce in
 * every lock's text tells a new lock of the same pid from the stale one.
 */
function removeIfStill(lock: string, stale: string, me: string): void {
  const guard = `${lock}.takeover`;
  if (!createExclusive(guard, me)) {
    // Another taker is at it (for microseconds); one that died there leaves its guard behind.
    const text = readQuiet(guard);
    if (isDead(text) && readQuiet(guard) === text) rmSync(guard, { force: true });
    return;
  }
  try {
    if (readQuiet(lock) === stale) rmSync(lock, { force: true });
  } finally {
    rmSync(guard, { force: true });
  }
}

/**
 * Runs `fn` while holding `{file}.lock`, a file created exclusively (O_EXCL) that holds the
 * holder's pid and a nonce, so that read-modify-write cycles of several processes on one file
 * never interleave. A lock whose holder has died is taken over (removeIfStill); a live holder's
 * lock is never taken, however long it holds it. Throws after waiting 10 s for a live holder.
 */
export function withFileLock<T>(file: string, fn: () => T): T {
  const lock = `${file}.lock`;
  const me = `${process.pid} ${randomBytes(8).toString('hex')}`;
  const deadline = Date.now() + WAIT_MS;
  while (!createExclusive(lock, me)) {
    const text = readQuiet(lock);
    if (text !== undefined && isDead(text)) removeIfStill(lock, text, me);
    else if (Date.now() > deadline) throw new Error(`${lock} is held by process ${holderOf(text)}; try again`);
    else sleepSync(STEP_MS);
  }
  try {
    return fn();
  } finally {
    // Ours alone: nobody removes a live holder's lock.
    rmSync(lock, { force: true });
  }
}
