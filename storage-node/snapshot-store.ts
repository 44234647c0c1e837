import fs from 'node:fs';
import { WHITELIST_KINDS, type WhitelistKind } from './protocol';
import { replaceFileSync } from './durable-fs';
import { parseApplyRequest } from './validate';
import type { BatchRecord, StateImage } from './whitelist-state';

/** A compacted state: everything up to and including log record `lastSeq`. */
export interface Snapshot extends StateImage {
  lastSeq: number;
}

const SNAPSHOT_VERSION = 1;

function checkImage(value: Record<string, unknown>): Snapshot {
  const fail = (what: string): never => {
    throw new Error(what);
  };
  const { version, lastSeq, entries, batches } = value;
  if (version !== SNAPSHOT_VERSION) fail(`unknown version ${String(version)}`);
  if (typeof lastSeq !== 'number' || !Number.isSafeInteger(lastSeq) || lastSeq < 0) fail('lastSeq');
  if (typeof entries !== 'object' || entries === null) fail('entries');
  const lists = entries as Record<string, unknown>;
  for (const kind of WHITELIST_KINDS) {
    const list = lists[kind];
    if (!Array.isArray(list) || !list.every((entry) => typeof entry === 'string')) fail(`entries.${kind}`);
  }
  if (!Array.isArray(batches)) fail('batches');
  const records = (batches as Record<string, unknown>[]).map((batch): BatchRecord => {
    const { batchId, changes } = parseApplyRequest({ batchId: batch?.batchId, changes: batch?.changes });
    const changed = batch.changed;
    if (!Array.isArray(changed) || changed.length !== changes.length || !changed.every((c) => typeof c === 'boolean')) {
      fail(`batch ${batchId}`);
    }
    return { batchId, changes, changed: changed as boolean[] };
  });
  return { lastSeq: lastSeq as number, entries: lists as Record<WhitelistKind, string[]>, batches: records };
}

/**
 * Reads the snapshot at `file`, or returns undefined when there is none yet. A snapshot is only
 * ever replaced by rename, so an unreadable one is real corruption and throws.
 */
export function readSnapshot(file: string): Snapshot | undefined {
  // A leftover temp file is a compaction that crashed before its rename; the old snapshot and the
  // log still hold everything, so the half-written copy is simply dropped.
  fs.rmSync(`${file}.tmp`, { force: true });
  if (!fs.existsSync(file)) return undefined;
  try {
    const value: unknown = JSON.parse(fs.readFileSync(file, 'utf8'));
    if (typeof value !== 'object' || value === null) throw new Error('not an object');
    return checkImage(value as Record<string, unknown>);
  } catch (err) {
    throw new Error(`${file}: corrupt snapshot (${(err as Error).message})`);
  }
}

/** Writes a snapshot atomically and durably (temp file, fsync, rename, directory fsync). */
export function writeSnapshot(dir: string, file: string, snapshot: Snapshot): void {
  const body = { version: SNAPSHOT_VERSION, ...snapshot };
  replaceFileSync(dir, file, Buffer.from(JSON.stringify(body)));
}
