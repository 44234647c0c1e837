import { majorityOf } from './rendezvous';
import type { WhitelistChange } from './whitelist-messages';

/**
 * What happened to one change of a batch, as `GET /chain/whitelists/batches/{batchId}` shows it:
 * - `applied`: its node applied it (and, the batch not having failed, it stays);
 * - `pending`: its node has not answered yet; the workflow keeps trying (after a 408);
 * - `reverted`: the batch failed (500) and what this change did on its node was undone;
 * - `not-applied`: its node never applied it (the batch was refused, or the node refused first);
 * - `unknown`: the workflow was stopped from outside (terminated, timed out) before its node answered.
 */
export type ChangeState = 'applied' | 'pending' | 'reverted' | 'not-applied' | 'unknown';

/** A node's progress as the batch workflow tracks it (contracts/temporal.ts NodeStatus). */
export type NodeStatus = 'pending' | 'applied' | 'failed' | 'reverted' | 'not-applied';

/**
 * The state of a change from the progress of its replicas' nodes, the batch's HTTP status
 * (undefined until known) and whether the workflow still runs: applied once a majority of its
 * replicas applied it (what the batch's 200 means, decision 0093), reverted when its batch failed
 * and a replica undid it. A 403 batch touched no node.
 */
export function changeState(progress: readonly NodeStatus[], httpStatus: number | undefined, running: boolean): ChangeState {
  if (httpStatus === 403) return 'not-applied';
  if (httpStatus === 500) {
    if (progress.some((p) => p === 'reverted')) return 'reverted';
    if (progress.every((p) => p === 'not-applied')) return 'not-applied';
    return running ? 'pending' : 'unknown';
  }
  if (progress.filter((p) => p === 'applied').length >= majorityOf(progress.length)) return 'applied';
  return running ? 'pending' : 'unknown';
}

/** One change of a batch as the `batchStatus` query shows it. */
export interface BatchChange extends WhitelistChange {
  /** The first of the change's replicas: the node with its entry's highest rendezvous weight (the status answer names it `node-N`). */
  node: string;
  /** Every node that holds a copy of the entry, `node` first. */
  replicas?: string[];
  /** The node's answer, once it answered: whether the change altered the set (an add of a present entry did not). */
  changed?: boolean;
  /**
   * Set when a newer batch had already decided the entry on its node: the change counts as applied
   * (the last accepted change wins) but did not alter the set.
   */
  superseded?: true;
}

/** One change of a batch in the status answer: the query's view and the state it is in. */
export interface BatchChangeStatus extends BatchChange {
  state: ChangeState;
}
