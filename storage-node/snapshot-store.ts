import fs from 'node:fs';
import { WHITELIST_KINDS, type WhitelistKind } from './protocol';
import { replaceFileSync } from '../lib/durable-fs';
import { parseBatchRecord } from './log-store';
import type { StateImage } from './whitelist-state';

/** A compacted state: everything up to and including log record `lastSeq`. */
export interface Snapshot extends StateImage {
  lastSeq: number;
}

/**
 * Version 2 adds the audit fields (`tokenId`, `revertOf`, `appliedAt`) to remembered batches;
 * version 1 snapshots (batches without them) are still read.
 */
const SNAPSHOT_VERSION = 2;
const READABLE_VERSIONS: readonly unknown[] = [1, 2];

function checkImage(value: Record<string, unknown>): Snapshot {
  const fail = (what: string): never => {
    throw new Error(what);
  };
  const { version, lastSeq, entries, batches } = value;
  if (!READABLE_VERSIONS.includes(version)) fail(`unknown version ${String(version)}`);
  if (typeof lastSeq !== 'number' || !Number.isSafeInteger(lastSeq) || lastSeq < 0) fail('lastSeq');
  if (typeof entries !== 'object' || entries === null) fail('entries');
  const lists = entries as Record<string, unknown>;
  for (const kind of WHITELIST_KINDS) {
    const list = lists[kind];
    if (!Array.isArray(list) || !list.every((entry) => typeof entry === 'string')) fail(`entries.${kind}`);
  }
  if (!Array.isArray(batches)) fail('batches');
  const records = (batches as unknown[]).map((batch, i) => {
    try {
      return parseBatchRecord(batch as Parameters<typeof parseBatchRecord>[0]);
    } catch (err) {
      return fail(`batch ${i}: ${(err as Error).message}`);
    }
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
