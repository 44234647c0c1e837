import { WHITELIST_KINDS, compareEntries, type ApplyResponse, type WhitelistChange, type WhitelistKind } from './protocol';

/**
 * One applied batch as the node remembers it: what was asked and, per change, whether it changed
 * the set. `changed[i]` belongs to `changes[i]`; together they rebuild the 200 answer.
 */
export interface BatchRecord {
  batchId: string;
  changes: WhitelistChange[];
  changed: boolean[];
  /** Audit fields (ApplyRequest); absent on records written before they existed. */
  tokenId?: string;
  revertOf?: string;
  /** When the node first applied the batch (ISO-8601, the node's clock). */
  appliedAt?: string;
}

/** The audit fields of a new batch record. */
export type BatchAudit = Pick<BatchRecord, 'tokenId' | 'revertOf' | 'appliedAt'>;

/** Plain-data copy of the state, as written to and read from a snapshot. */
export interface StateImage {
  entries: Record<WhitelistKind, string[]>;
  /** Remembered batches, oldest first. */
  batches: BatchRecord[];
}

/**
 * What `plan` decided: `new` must be made durable and then `commit`ted; `repeat` is answered
 * from the record as it is; `conflict` means the batchId was used for other changes.
 */
export type ApplyPlan =
  { type: 'new'; record: BatchRecord } | { type: 'repeat'; record: BatchRecord } | { type: 'conflict'; record: BatchRecord };

/** How many batchIds the node remembers for idempotency unless told otherwise. */
export const DEFAULT_REMEMBERED_BATCHES = 10_000;

const changeKey = (change: WhitelistChange): string => `${change.kind}\u0000${change.entry}`;

const sameChanges = (a: WhitelistChange[], b: WhitelistChange[]): boolean =>
  a.length === b.length &&
  a.every((change, i) => change.op_type === b[i].op_type && change.kind === b[i].kind && change.entry === b[i].entry);

/** Builds the 200 answer of `POST /v1/whitelists/apply` from a batch record. */
export function toApplyResponse(record: BatchRecord): ApplyResponse {
  return {
    batchId: record.batchId,
    results: record.changes.map((change, i) => ({
      kind: change.kind,
      entry: change.entry,
      op_type: change.op_type,
      changed: record.changed[i],
    })),
  };
}

/**
 * The whitelists and the remembered batches, in memory, with no I/O. Applying is split into a
 * pure `plan` and a `commit` so that the caller can make a batch durable in between: memory then
 * never holds a change the disk does not.
 */
export class WhitelistState {
  private readonly sets = new Map<WhitelistKind, Set<string>>(WHITELIST_KINDS.map((kind) => [kind, new Set()]));
  // A Map keeps insertion order, which is the eviction order: the oldest batchId is forgotten first.
  private readonly batches = new Map<string, BatchRecord>();
  // Sorted copies of the sets for paginated reads, rebuilt on the first read after a change.
  private readonly sorted = new Map<WhitelistKind, string[]>();

  constructor(private readonly maxRememberedBatches = DEFAULT_REMEMBERED_BATCHES) {
    if (!Number.isInteger(maxRememberedBatches) || maxRememberedBatches < 1) {
      throw new RangeError('maxRememberedBatches must be a positive integer');
    }
  }

  /** Rebuilds a state from a snapshot image. */
  static fromImage(image: StateImage, maxRememberedBatches = DEFAULT_REMEMBERED_BATCHES): WhitelistState {
    const state = new WhitelistState(maxRememberedBatches);
    for (const kind of WHITELIST_KINDS) {
      for (const entry of image.entries[kind] ?? []) state.sets.get(kind)!.add(entry);
    }
    for (const record of image.batches) state.remember(record);
    return state;
  }

  /**
   * Decides what applying a batch would do, without changing anything. Changes apply in order,
   * so an add then a remove of one entry in one batch are both `changed`.
   */
  plan(batchId: string, changes: WhitelistChange[], audit: BatchAudit = {}): ApplyPlan {
    const known = this.batches.get(batchId);
    if (known) return { type: sameChanges(known.changes, changes) ? 'repeat' : 'conflict', record: known };
    const pending = new Map<string, boolean>();
    const changed = changes.map((change) => {
      const key = changeKey(change);
      const present = pending.get(key) ?? this.sets.get(change.kind)!.has(change.entry);
      const wantPresent = change.op_type === 'add_entry';
      pending.set(key, wantPresent);
      return present !== wantPresent;
    });
    const fields = Object.fromEntries(Object.entries(audit).filter(([, value]) => value !== undefined));
    return { type: 'new', record: { batchId, changes: changes.map((change) => ({ ...change })), changed, ...fields } };
  }

  /**
   * Applies a batch record and remembers it under its batchId. Used for a freshly planned batch
   * and for replaying the log; set operations make the outcome independent of `changed`.
   */
  commit(record: BatchRecord): void {
    for (const change of record.changes) {
      this.sorted.delete(change.kind);
      const set = this.sets.get(change.kind)!;
      if (change.op_type === 'add_entry') set.add(change.entry);
      else set.delete(change.entry);
    }
    this.remember(record);
  }

  /** The entries of one whitelist, in compareEntries order. */
  entries(kind: WhitelistKind): string[] {
    return [...this.sortedEntries(kind)];
  }

  /** At most `limit` entries that sort after `after` (compareEntries), and whether more follow. */
  page(kind: WhitelistKind, after: string | undefined, limit: number): { entries: string[]; more: boolean } {
    const all = this.sortedEntries(kind);
    let start = 0;
    if (after !== undefined) {
      // Binary search for the first entry that sorts after `after`.
      let high = all.length;
      while (start < high) {
        const mid = (start + high) >>> 1;
        if (compareEntries(all[mid], after) <= 0) start = mid + 1;
        else high = mid;
      }
    }
    return { entries: all.slice(start, start + limit), more: start + limit < all.length };
  }

  /** Whether `entry` (exactly this text) is on the whitelist. */
  has(kind: WhitelistKind, entry: string): boolean {
    return this.sets.get(kind)!.has(entry);
  }

  /** Whether the batchId is still remembered (not yet evicted). */
  remembers(batchId: string): boolean {
    return this.batches.has(batchId);
  }

  /** A plain-data copy for a snapshot. */
  toImage(): StateImage {
    const entries = Object.fromEntries(WHITELIST_KINDS.map((kind) => [kind, this.entries(kind)]));
    return { entries: entries as Record<WhitelistKind, string[]>, batches: [...this.batches.values()] };
  }

  private sortedEntries(kind: WhitelistKind): string[] {
    let list = this.sorted.get(kind);
    if (!list) {
      list = [...this.sets.get(kind)!].sort(compareEntries);
      this.sorted.set(kind, list);
    }
    return list;
  }

  private remember(record: BatchRecord): void {
    // Delete first so a re-applied batchId (possible only after eviction) moves to the newest end.
    this.batches.delete(record.batchId);
    this.batches.set(record.batchId, record);
    while (this.batches.size > this.maxRememberedBatches) {
      this.batches.delete(this.batches.keys().next().value as string);
    }
  }
}
