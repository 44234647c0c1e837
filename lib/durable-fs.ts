import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { dirname } from 'node:path';

/**
 * Writes the whole buffer at the file's current position. `fs.writeSync` may write fewer bytes
 * than asked (a full disk, a signal), so it is called until everything is written or it throws.
 */
export function writeAllSync(fd: number, data: Buffer): void {
  let offset = 0;
  while (offset < data.length) offset += fs.writeSync(fd, data, offset, data.length - offset);
}

/**
 * Makes a directory's entries durable. A file's own fsync does not cover its name: after a power
 * loss a new or renamed file may vanish unless its directory is synced too.
 */
export function fsyncDirectory(dir: string): void {
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Replaces `path` with `data` atomically and durably: temp file, fsync, rename over, fsync the
 * directory. A crash leaves either the old file or the new one, never a mix. `tmp` names the temp
 * file (one per writer when several processes may write the same file); `mode` its permissions;
 * `owner` the uid and gid it should keep (set only where the writer may: root).
 */
export function replaceFileSync(
  dir: string,
  path: string,
  data: Buffer,
  options: { tmp?: string; mode?: number; owner?: { uid: number; gid: number } } = {},
): void {
  const tmp = options.tmp ?? `${path}.tmp`;
  const fd = fs.openSync(tmp, 'w', options.mode ?? 0o666);
  try {
    // An exact mode (the umask only takes bits away) and, when given, the owner of the file it
    // replaces: a writer that may not give the file away (not root) keeps its own uid and group.
    if (options.mode !== undefined) fs.fchmodSync(fd, options.mode);
    if (options.owner) {
      try {
        fs.fchownSync(fd, options.owner.uid, options.owner.gid);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EPERM') throw err;
        try {
          fs.fchownSync(fd, -1, options.owner.gid); // the group alone, where the writer is in it
        } catch (again) {
          if ((again as NodeJS.ErrnoException).code !== 'EPERM') throw again;
        }
      }
    }
    writeAllSync(fd, data);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, path);
  fsyncDirectory(dir);
}

/**
 * Creates `file` (and its folder, 0700) holding `contents()`, readable by its owner only (0600),
 * unless it exists: written and synced under a temporary name, then hard-linked into place, so
 * that two processes racing to create it keep one. Returns whether this call created it.
 */
export function createSecretFileOnce(file: string, contents: () => string): boolean {
  const dir = dirname(file);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (fs.existsSync(file)) return false;
  const tmp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  const fd = fs.openSync(tmp, 'wx', 0o600);
  try {
    // The umask may only take bits away from 0600; this makes it exactly that.
    fs.fchmodSync(fd, 0o600);
    writeAllSync(fd, Buffer.from(contents()));
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  try {
    fs.linkSync(tmp, file);
    fsyncDirectory(dir);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    fs.rmSync(tmp, { force: true });
  }
}
