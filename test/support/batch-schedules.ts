import fc from 'fast-check';
import type { OpType, WhitelistChange, WhitelistKind } from '../../contracts/storage-node-protocol';

/** One accepted or failed batch as a node sees its share. */
export interface ScheduledBatch {
  batchId: string;
  position: number;
  changes: WhitelistChange[];
  /** The batch answered 500: its workflow reverts it, and it must leave no trace. */
  failed: boolean;
}

/** One message to the node: a batch's apply or its revert. */
export interface Delivery {
  batch: number;
  revert: boolean;
}

export interface Schedule {
  batches: ScheduledBatch[];
  /** In arrival order: late, duplicated, reverts before their apply, all allowed. */
  deliveries: Delivery[];
}

const change = (entries: readonly string[]) =>
  fc.record({
    op_type: fc.constantFrom<OpType>('add_entry', 'remove_entry'),
    kind: fc.constantFrom<WhitelistKind>('developer', 'user'),
    entry: fc.constantFrom(...entries),
  });

/**
 * Batches over a few entries, some failed, and a delivery order in which every accepted batch's
 * apply arrives one to three times, a failed batch's apply zero to three times and its revert
 * one or two times, all shuffled. Positions may collide (the batchId breaks the tie).
 */
export function scheduleArbitrary(entries: readonly string[], maxBatches = 7): fc.Arbitrary<Schedule> {
  return fc
    .array(
      fc.record({
        position: fc.integer({ min: 0, max: 5 }),
        changes: fc.array(change(entries), { minLength: 1, maxLength: 4 }),
        failed: fc.boolean(),
        applies: fc.integer({ min: 0, max: 3 }),
        reverts: fc.integer({ min: 1, max: 2 }),
      }),
      { minLength: 1, maxLength: maxBatches },
    )
    .chain((specs) => {
      const batches = specs.map((s, i) => ({ batchId: `b${i}`, position: s.position, changes: s.changes, failed: s.failed }));
      const deliveries: Delivery[] = specs.flatMap((s, i) => [
        ...Array.from({ length: s.failed ? s.applies : Math.max(1, s.applies) }, () => ({ batch: i, revert: false })),
        ...Array.from({ length: s.failed ? s.reverts : 0 }, () => ({ batch: i, revert: true })),
      ]);
      return fc
        .shuffledSubarray(deliveries, { minLength: deliveries.length, maxLength: deliveries.length })
        .map((order) => ({ batches, deliveries: order }));
    });
}

/** What the whitelists must hold: the accepted batches applied one after another in their order. */
export function sequentialOutcome(batches: readonly ScheduledBatch[]): Record<WhitelistKind, string[]> {
  const sets: Record<WhitelistKind, Set<string>> = { developer: new Set(), user: new Set() };
  const accepted = batches
    .filter((b) => !b.failed)
    .sort((a, b) => (a.position !== b.position ? a.position - b.position : a.batchId < b.batchId ? -1 : a.batchId > b.batchId ? 1 : 0));
  for (const batch of accepted) {
    for (const c of batch.changes) {
      if (c.op_type === 'add_entry') sets[c.kind].add(c.entry);
      else sets[c.kind].delete(c.entry);
    }
  }
  return { developer: [...sets.developer].sort(), user: [...sets.user].sort() };
}
