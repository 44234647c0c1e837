import type { ChangeResult } from '../storage-node/protocol';
import type { WhitelistChange } from './whitelist-messages';

/** One storage node's answer for one change (the wire's ChangeResult). */
export type NodeResult = Readonly<ChangeResult>;

/**
 * The changes that undo a batch on one node: only what the batch actually changed, flipped, newest
 * first (so "add X, remove X" is undone as "add X, remove X" and leaves X as it was).
 */
export function inverseChanges(results: readonly NodeResult[]): WhitelistChange[] {
  return results
    .filter((r) => r.changed)
    .reverse()
    .map((r) => ({ op_type: r.op_type === 'add_entry' ? 'remove_entry' : 'add_entry', kind: r.kind, entry: r.entry }));
}
