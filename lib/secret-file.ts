/**
 * Reading a file that holds a private key: only when its owner alone may read or write it. A key
 * file left 0644 by a careless copy is refused at start, naming the file and its mode, rather than
 * used without a word.
 */
import fs from 'node:fs';

/**
 * The text of `file`, whose mode must give group and others nothing (0600 or 0400). Throws naming
 * the file (`what` says which: "deposit seed file") and, for a wrong mode, the mode; never its content.
 */
export function readPrivateFile(file: string, what: string): string {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch (err) {
    throw new Error(`cannot read the ${what} ${file}: ${(err as Error).message}`);
  }
  try {
    // The mode of the file opened, not of whatever the path names a moment later.
    const mode = fs.fstatSync(fd).mode & 0o777;
    if ((mode & 0o077) !== 0)
      throw new Error(`the ${what} ${file} has mode ${mode.toString(8).padStart(4, '0')}: group or others may use it; chmod 600 ${file}`);
    return fs.readFileSync(fd, 'utf8');
  } finally {
    fs.closeSync(fd);
  }
}
