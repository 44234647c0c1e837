import { appendFileSync, existsSync, writeSync } from 'node:fs';
import { withFileLock } from '../../lib/file-lock';

/**
 * `node dist/test/support/lock-holder.js FILE NAME LOG`: takes FILE's lock (lib/file-lock.ts),
 * appends `enter NAME` to LOG, prints `held` and keeps the lock until the file `LOG.release-NAME`
 * exists, then appends `exit NAME` and lets it go. Two writers inside at once show in LOG as two
 * `enter` lines without an `exit` between them.
 */
const [file, name, log] = process.argv.slice(2);
const wait = new Int32Array(new SharedArrayBuffer(4));
withFileLock(file, () => {
  appendFileSync(log, `enter ${name}\n`);
  writeSync(1, 'held\n');
  while (!existsSync(`${log}.release-${name}`)) Atomics.wait(wait, 0, 0, 10);
  appendFileSync(log, `exit ${name}\n`);
});
