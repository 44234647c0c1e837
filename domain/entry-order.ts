/**
 * The last accepted change wins, whatever arrives late: the pure rule a node applies to one
 * whitelist entry (decision 0061). Every change carries its batch's place in one order (the
 * batch's position, then its batchId, then the change's index in the node's share); an entry's
 * presence is the operation of its newest change in that order that was not reverted. A node
 * keeps a bounded number of the entry's changes (superseded and reverted ones included, the
 * winner always), so that a late delivery, a duplicate or a revert lands where the order puts it,
 * not where it arrived. No I/O.
 */
import type { OpType } from './whitelist-messages';

/** Where a change stands in the one order of accepted batches. */
export interface ChangeOrder {
  /** The batch's position: its workflow's start time, ms since the epoch. */
  position: number;
  /** Breaks ties between batches started in the same millisecond. */
  batchId: string;
  /** The change's place in the node's share of its batch (a batch may touch one entry twice). */
  index: number;
}

/** One change to an entry, as the entry's history keeps it. */
export interface EntryChange extends ChangeOrder {
  op: OpType;
  /** Undone by its batch's revert (or a revert that came before the change itself). */
  reverted: boolean;
  /** What the first delivery answered, so that a repeat answers the same. */
  changed: boolean;
  superseded: boolean;
}

/** An entry's state: its kept changes and what the others, folded away, left. */
export interface EntryHistory {
  /**
   * Presence if every kept change were reverted (what the folded live changes left: they are
   * always older than every kept live one), and the order of the newest folded change: a change
   * at or before it that is not kept arrives too late to count.
   */
  base: { present: boolean; order?: ChangeOrder };
  /** Changes not folded, in ascending order; some may be older than `base.order` (see fold). */
  changes: EntryChange[];
}

/** What one delivery did to the entry. */
export interface Verdict {
  /** The entry's presence changed. */
  changed: boolean;
  /** A newer change (in the order) had already decided the entry; this one did not apply. */
  superseded: boolean;
}

/** How many changes an entry keeps unless told otherwise; older ones fold into its base. */
export const DEFAULT_KEPT_CHANGES = 32;

export const emptyHistory = (): EntryHistory => ({ base: { present: false }, changes: [] });

/** Orders changes: position, then batchId (code-unit order), then index. */
export function compareOrder(a: ChangeOrder, b: ChangeOrder): number {
  if (a.position !== b.position) return a.position < b.position ? -1 : 1;
  if (a.batchId !== b.batchId) return a.batchId < b.batchId ? -1 : 1;
  return a.index - b.index;
}

/** Whether the entry is on the whitelist: its newest change that was not reverted, else its base. */
export function isPresent(history: EntryHistory): boolean {
  for (let i = history.changes.length - 1; i >= 0; i--) {
    const change = history.changes[i];
    if (!change.reverted) return change.op === 'add_entry';
  }
  return history.base.present;
}

/** Whether a change that is not kept is too late to count (at or before the newest folded one). */
const folded = (history: EntryHistory, order: ChangeOrder) =>
  history.base.order !== undefined && compareOrder(order, history.base.order) <= 0;

function locate(history: EntryHistory, order: ChangeOrder): { at: number; found: boolean } {
  let at = history.changes.length;
  while (at > 0 && compareOrder(history.changes[at - 1], order) > 0) at--;
  if (at > 0 && compareOrder(history.changes[at - 1], order) === 0) return { at: at - 1, found: true };
  return { at, found: false };
}

/**
 * Keeps at most `keep` changes. Reverted changes fold first (oldest first): folded, a late copy of
 * one is superseded, as it would be kept. Then the oldest live ones, never the newest (the
 * entry's winner): a failed batch's revert must find its change while that change decides the
 * entry, however many newer changes came and were reverted. Live changes fold oldest first, so
 * the base's presence is always what the kept ones would fall back to.
 */
function fold(history: EntryHistory, keep: number): EntryHistory {
  const { changes } = history;
  if (changes.length <= keep) return history;
  const excess = changes.length - keep;
  let winner = changes.length - 1;
  while (winner >= 0 && changes[winner].reverted) winner--;
  const out = new Set<number>();
  for (let i = 0; i < changes.length && out.size < excess; i++) if (changes[i].reverted) out.add(i);
  for (let i = 0; i < changes.length && out.size < excess; i++) if (i !== winner) out.add(i);
  let { present, order } = history.base;
  for (let i = 0; i < changes.length; i++) {
    if (!out.has(i)) continue;
    const change = changes[i];
    if (!change.reverted) present = change.op === 'add_entry';
    if (order === undefined || compareOrder(change, order) > 0)
      order = { position: change.position, batchId: change.batchId, index: change.index };
  }
  return { base: { present, order }, changes: changes.filter((_, i) => !out.has(i)) };
}

/** Whether a change after index `from` is live (not reverted). */
function newerLive(changes: readonly EntryChange[], from: number): boolean {
  for (let i = from + 1; i < changes.length; i++) if (!changes[i].reverted) return true;
  return false;
}

/** A copy of `changes` with `change` at index `at` (splice measured several times slower here). */
const inserted = (changes: readonly EntryChange[], at: number, change: EntryChange): EntryChange[] => [
  ...changes.slice(0, at),
  change,
  ...changes.slice(at),
];

/**
 * Delivers one change. A change older than everything the entry still keeps is superseded; a
 * repeat answers what its first delivery answered; a change whose batch was already reverted
 * stays undone. Otherwise it takes its place in the order, and decides the entry only if nothing
 * newer has.
 */
export function applyChange(
  history: EntryHistory,
  order: ChangeOrder,
  op: OpType,
  keep = DEFAULT_KEPT_CHANGES,
): { history: EntryHistory; verdict: Verdict; repeat?: true } {
  const { at, found } = locate(history, order);
  if (!found && folded(history, order)) return { history, verdict: { changed: false, superseded: true } };
  if (found) {
    const known = history.changes[at];
    const verdict = known.reverted ? { changed: false, superseded: true } : { changed: known.changed, superseded: known.superseded };
    return { history, verdict, repeat: true };
  }
  const before = isPresent(history);
  const superseded = newerLive(history.changes, at - 1);
  const entry = changeAt(order, op, { reverted: false, changed: false, superseded });
  const next = { base: history.base, changes: inserted(history.changes, at, entry) };
  entry.changed = isPresent(next) !== before;
  return { history: fold(next, keep), verdict: { changed: entry.changed, superseded } };
}

/**
 * Undoes the change of a failed batch. It changes the entry only if that change was the newest
 * live one (nothing newer touched the entry). A revert that comes before its change leaves a
 * marker, so that the change, arriving late, is not applied.
 */
export function revertChange(
  history: EntryHistory,
  order: ChangeOrder,
  op: OpType,
  keep = DEFAULT_KEPT_CHANGES,
): { history: EntryHistory; verdict: Verdict; repeat?: true } {
  const { at, found } = locate(history, order);
  if (!found && folded(history, order)) return { history, verdict: { changed: false, superseded: true } };
  if (found) {
    if (history.changes[at].reverted) return { history, verdict: { changed: false, superseded: false }, repeat: true };
    const before = isPresent(history);
    const changes = [...history.changes];
    changes[at] = { ...changes[at], reverted: true };
    const next = { base: history.base, changes };
    return { history: next, verdict: { changed: isPresent(next) !== before, superseded: newerLive(changes, at) } };
  }
  const marker = changeAt(order, op, { reverted: true, changed: false, superseded: false });
  return {
    history: fold({ base: history.base, changes: inserted(history.changes, at, marker) }, keep),
    verdict: { changed: false, superseded: false },
  };
}

/** A change as an entry keeps it. Written out field by field: spreading `order` measured 25 times slower. */
const changeAt = (order: ChangeOrder, op: OpType, state: Pick<EntryChange, 'reverted' | 'changed' | 'superseded'>): EntryChange => ({
  position: order.position,
  batchId: order.batchId,
  index: order.index,
  op,
  reverted: state.reverted,
  changed: state.changed,
  superseded: state.superseded,
});

/** The newer of two folded orders (undefined: nothing folded). */
const newerOrder = (a: ChangeOrder | undefined, b: ChangeOrder | undefined): ChangeOrder | undefined =>
  a === undefined ? b : b === undefined ? a : compareOrder(a, b) >= 0 ? a : b;

/**
 * Two replicas' histories of one entry as one (what a repair or a read repair leaves): every kept
 * change of either, a change reverted where either says so, and the base folded furthest. A repeat
 * of a merge changes nothing, and the order of the arguments only decides which replica's answer
 * flags a change keeps. Exact while neither replica has folded a change the other still keeps
 * live (fewer than `keep` changes to the entry), the same bound as late deliveries'.
 */
export function mergeHistories(mine: EntryHistory, theirs: EntryHistory, keep = DEFAULT_KEPT_CHANGES): EntryHistory {
  const changes: EntryChange[] = [];
  let i = 0;
  let j = 0;
  while (i < mine.changes.length || j < theirs.changes.length) {
    const a = mine.changes[i];
    const b = theirs.changes[j];
    const c = a === undefined ? 1 : b === undefined ? -1 : compareOrder(a, b);
    if (c < 0) changes.push(mine.changes[i++]);
    else if (c > 0) changes.push(theirs.changes[j++]);
    else {
      changes.push(b.reverted && !a.reverted ? { ...a, reverted: true } : a);
      i++;
      j++;
    }
  }
  const mineOrder = mine.base.order;
  const order = newerOrder(mineOrder, theirs.base.order);
  const owner = order === mineOrder ? mine : theirs;
  const base = owner.base;
  // At or before the base's order, only what the base's replica keeps: a change it does not keep
  // there is folded into that base already (or would have arrived too late to count).
  const kept = changes.filter(
    (change) => order === undefined || compareOrder(change, order) > 0 || owner.changes.some((m) => compareOrder(m, change) === 0),
  );
  return fold({ base: { present: base.present, ...(order === undefined ? {} : { order }) }, changes: kept }, keep);
}

/**
 * Whether `history` already holds everything `other` does: each of its changes (reverted where
 * `other` says so) and a base folded as far. A replica that covers the merged history of a read
 * needs no repair.
 */
export function covers(history: EntryHistory, other: EntryHistory): boolean {
  const o = other.base.order;
  if (o !== undefined && (history.base.order === undefined || compareOrder(history.base.order, o) < 0)) return false;
  return other.changes.every((change) => {
    const { at, found } = locate(history, change);
    if (!found) return folded(history, change);
    return history.changes[at].reverted || !change.reverted;
  });
}

/** Several replicas' histories of one entry as one (none: the empty history). */
export function mergeAll(histories: readonly EntryHistory[], keep = DEFAULT_KEPT_CHANGES): EntryHistory {
  return histories.reduce((merged, history) => mergeHistories(merged, history, keep), emptyHistory());
}
