import fs from 'node:fs';
import path from 'node:path';
import { fsyncDirectory, writeAllSync } from '../lib/durable-fs';
import { ISO_TIME_PATTERN } from './protocol';
import { parseApplyRequest } from './validate';
import type { BatchRecord } from './whitelist-state';

const ISO_TIME = new RegExp(ISO_TIME_PATTERN);

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

/**
 * Checks one batch record read from disk (a log line or a snapshot's batch). Records written
 * before the audit fields existed have none of `tokenId`, `revertOf`, `appliedAt`: still valid.
 */
export function parseBatchRecord(value: Partial<BatchRecord> | null | undefined): BatchRecord {
  const { batchId, changes, tokenId, revertOf } = parseApplyRequest({
    batchId: value?.batchId,
    changes: value?.changes,
    ...(value?.tokenId === undefined ? {} : { tokenId: value.tokenId }),
    ...(value?.revertOf === undefined ? {} : { revertOf: value.revertOf }),
  });
  const changed = value?.changed;
  if (!Array.isArray(changed) || changed.length !== changes.length || !changed.every((c) => typeof c === 'boolean')) {
    throw new Error('bad changed flags');
  }
  const appliedAt = value?.appliedAt;
  if (appliedAt !== undefined && (typeof appliedAt !== 'string' || !ISO_TIME.test(appliedAt))) throw new Error('bad appliedAt');
  return {
    batchId,
    changes,
    changed,
    ...(tokenId === undefined ? {} : { tokenId }),
    ...(revertOf === undefined ? {} : { revertOf }),
    ...(appliedAt === undefined ? {} : { appliedAt }),
  };
}

function parseLine(line: Buffer): LoggedBatch {
  const value = JSON.parse(line.toString('utf8')) as Partial<LoggedBatch>;
  const { seq } = value;
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 1) throw new Error('bad seq');
  return { seq, ...parseBatchRecord(value) };
}

/** A record's log line: the fields in a fixed order, so equal records give equal bytes. */
function lineOf(record: LoggedBatch): string {
  const { seq, batchId, changes, changed, tokenId, revertOf, appliedAt } = record;
  return `${JSON.stringify({ seq, batchId, changes, changed, tokenId, revertOf, appliedAt })}\n`;
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
    this.appendAll([record]);
  }

  /** Appends several records with one fsync (the audit archive takes a whole log at a time). */
  appendAll(records: readonly LoggedBatch[]): void {
    if (this.broken) throw this.broken;
    if (records.length === 0) return;
    const line = Buffer.from(records.map(lineOf).join(''));
    try {
      writeAllSync(this.fd, line);
      fs.fsyncSync(this.fd);
    } catch (err) {
      this.rollBack(err as Error);
      throw err;
    }
    this.bytes += line.length;
    this.count += records.length;
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
