import fs from 'node:fs';

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
 * file (one per writer when several processes may write the same file); `mode` its permissions.
 */
export function replaceFileSync(dir: string, path: string, data: Buffer, options: { tmp?: string; mode?: number } = {}): void {
  const tmp = options.tmp ?? `${path}.tmp`;
  const fd = fs.openSync(tmp, 'w', options.mode ?? 0o666);
  try {
    writeAllSync(fd, data);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, path);
  fsyncDirectory(dir);
}
