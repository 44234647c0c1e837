import fs from 'node:fs';
import path from 'node:path';
import { fsyncDirectory, writeAllSync } from './durable-fs';
import { parseApplyRequest } from './validate';
import type { BatchRecord } from './whitelist-state';

/** One log line: a batch record and its sequence number, which orders it against the snapshot. */
export interface LoggedBatch extends BatchRecord {
  seq: number;
}

/** What reading the log found on open. */
export interface LogContents {
  records: LoggedBatch[];
  /** Bytes of a torn last line that were cut off (0 when the log ended cleanly). */
  tornBytes: number;
}

const NEWLINE = 0x0a;

function parseLine(line: Buffer): LoggedBatch {
  const value = JSON.parse(line.toString('utf8')) as Partial<LoggedBatch>;
  const { batchId, changes } = parseApplyRequest({ batchId: value.batchId, changes: value.changes });
  const { seq, changed } = value;
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 1) throw new Error('bad seq');
  if (!Array.isArray(changed) || changed.length !== changes.length || !changed.every((c) => typeof c === 'boolean')) {
    throw new Error('bad changed flags');
  }
  return { seq, batchId, changes, changed };
}

/**
 * Splits the log into records. Only the last line may be bad: a crash during the append that
 * was never acknowledged. A bad line before it is real corruption and stops the node, because
 * skipping it would silently drop acknowledged changes.
 */
function parseLog(data: Buffer, file: string): { records: LoggedBatch[]; validBytes: number } {
  const records: LoggedBatch[] = [];
  let start = 0;
  while (start < data.length) {
    const end = data.indexOf(NEWLINE, start);
    // No newline: the write of this record did not finish, so it was never fsynced nor acknowledged.
    if (end === -1) break;
    let record: LoggedBatch;
    try {
      record = parseLine(data.subarray(start, end));
    } catch (err) {
      if (end + 1 === data.length) break;
      throw new Error(`${file}: corrupt record at byte ${start}: ${(err as Error).message}`);
    }
    const previous = records.at(-1);
    if (previous && record.seq <= previous.seq) throw new Error(`${file}: seq ${record.seq} out of order at byte ${start}`);
    records.push(record);
    start = end + 1;
  }
  return { records, validBytes: start };
}

/**
 * The append-only batch log: one JSON line per applied batch, each fsynced before the batch is
 * acknowledged. `reset` empties it once a snapshot holds its records.
 */
export class BatchLog {
  private broken: Error | undefined;
  private closed = false;

  private constructor(
    private readonly fd: number,
    private readonly file: string,
    private bytes: number,
    private count: number,
  ) {}

  /**
   * Opens (creating if needed) the log at `file`, returns its records and cuts a torn last line
   * off the file so new records do not land behind garbage.
   */
  static open(file: string): { log: BatchLog; contents: LogContents } {
    const existed = fs.existsSync(file);
    const data = existed ? fs.readFileSync(file) : Buffer.alloc(0);
    const { records, validBytes } = parseLog(data, file);
    const tornBytes = data.length - validBytes;
    const fd = fs.openSync(file, 'a');
    if (tornBytes > 0) {
      fs.ftruncateSync(fd, validBytes);
      fs.fsyncSync(fd);
    }
    if (!existed) fsyncDirectory(path.dirname(file));
    return { log: new BatchLog(fd, file, validBytes, records.length), contents: { records, tornBytes } };
  }

  /** Records appended since the log was last emptied. */
  get recordCount(): number {
    return this.count;
  }

  /** Current size of the log file in bytes. */
  get byteLength(): number {
    return this.bytes;
  }

  /**
   * Appends one record and fsyncs it; when this returns, the record survives a crash. On a failed
   * write or fsync the file is cut back to its previous length, because after a failed fsync the
   * kernel may have dropped the pages and the bytes on disk are unknown.
   */
  append(record: LoggedBatch): void {
    if (this.broken) throw this.broken;
    const line = Buffer.from(
      `${JSON.stringify({ seq: record.seq, batchId: record.batchId, changes: record.changes, changed: record.changed })}\n`,
    );
    try {
      writeAllSync(this.fd, line);
      fs.fsyncSync(this.fd);
    } catch (err) {
      this.rollBack(err as Error);
      throw err;
    }
    this.bytes += line.length;
    this.count += 1;
  }

  /** Empties the log; call only after a durable snapshot holds every record in it. */
  reset(): void {
    if (this.broken) throw this.broken;
    try {
      fs.ftruncateSync(this.fd, 0);
      fs.fsyncSync(this.fd);
    } catch (err) {
      this.broken = new Error(`${this.file}: could not empty the log: ${(err as Error).message}`);
      throw err;
    }
    this.bytes = 0;
    this.count = 0;
  }

  /** Closes the file descriptor; later appends throw instead of writing to a reused descriptor. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.broken = new Error(`${this.file}: log is closed`);
    fs.closeSync(this.fd);
  }

  private rollBack(cause: Error): void {
    try {
      fs.ftruncateSync(this.fd, this.bytes);
      fs.fsyncSync(this.fd);
    } catch {
      // The file's tail is now unknown; refuse further appends rather than build on it.
      this.broken = new Error(`${this.file}: log unusable after a failed append: ${cause.message}`);
    }
  }
}
