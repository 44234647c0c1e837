import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { projectRoot } from '../../config/config';
import { startChildService, type ChildService } from '../../scripts/lib/child-service';

const HOLDER = path.join(projectRoot, 'dist', 'test', 'support', 'lock-holder.js');

/** The pid of a process that has exited and been reaped (a stale lock's holder). */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await new Promise((resolve) => child.once('exit', resolve));
  return child.pid!;
}

// The tokens file's lock (lib/file-lock.ts) with real processes: a lock whose holder died is taken
// over, and the takeover never removes a live writer's lock.
describe('hostile: the tokens file lock and its stale-lock takeover', function () {
  this.timeout(30_000);
  let dir: string;
  const holders: ChildService[] = [];
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'file-lock-'));
  });
  afterEach(async () => {
    await Promise.all(holders.splice(0).map((h) => h.stop(2000, 'SIGKILL')));
    rmSync(dir, { recursive: true, force: true });
  });

  const holder = (file: string, name: string, log: string) => {
    const h = startChildService(`lock-${name}`, process.execPath, [HOLDER, file, name, log], { readyPattern: /^held$/, echo: false });
    holders.push(h);
    return h;
  };

  it('when a writer has judged the lock stale and a second writer takes it before the first removes it, then the first does not remove the live lock: one writer at a time', async () => {
    const file = path.join(dir, 'tokens.json');
    const lock = `${file}.lock`;
    const log = path.join(dir, 'log');
    writeFileSync(log, '');
    // The lock is a FIFO, so that writer B's read of the holder's pid waits until this test writes
    // it: B is held between its judgement (the holder is dead) and what it does with it.
    execFileSync('mkfifo', [lock]);
    const b = holder(file, 'B', log);
    const fifo = await open(lock, 'w'); // opens once B reads
    rmSync(lock);
    const a = holder(file, 'A', log);
    await a.ready; // A holds the lock: a regular file of its own at the path
    await fifo.write(String(await deadPid()));
    await fifo.close(); // B reads a dead holder's pid
    // Give B a moment to act on it: a B that removed A's lock is inside by now.
    const bInside = await Promise.race([b.ready.then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 2000))]);
    writeFileSync(`${log}.release-A`, '');
    await a.exited;
    await b.ready;
    writeFileSync(`${log}.release-B`, '');
    await b.exited;
    assert.deepEqual(
      readFileSync(log, 'utf8').trim().split('\n'),
      ['enter A', 'exit A', 'enter B', 'exit B'],
      `B inside early: ${bInside}`,
    );
  });

  it('when the lock was left by a writer that died, then the next writer takes it over', async () => {
    const file = path.join(dir, 'tokens.json');
    const log = path.join(dir, 'log');
    writeFileSync(log, '');
    writeFileSync(`${file}.lock`, String(await deadPid()));
    const a = holder(file, 'A', log);
    await a.ready;
    writeFileSync(`${log}.release-A`, '');
    await a.exited;
    assert.deepEqual(readFileSync(log, 'utf8').trim().split('\n'), ['enter A', 'exit A']);
  });
});
