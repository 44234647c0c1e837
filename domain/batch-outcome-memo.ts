import { majorityOf } from './rendezvous';
import { confirmationOfChecksummed, type WhitelistChange } from './whitelist-messages';

// A whitelist batch's HTTP outcome in a compact form, whatever the batch's size: the
// confirmations are not in it, the API rebuilds them from the changes it sent. The batch answers
// it to the `batchOutcome` Update and returns it (decision 0017).

/** A batch's HTTP outcome in full (contracts/temporal.ts names it BatchOutcome): what the API answers. */
export interface BatchOutcome {
  status: BatchOutcomeMemo['status'];
  /** Confirmations of the changes whose node answered, in request order. */
  confirmations: string[];
  errorMessage?: string;
}

export interface BatchOutcomeMemo {
  status: 200 | 403 | 408 | 500;
  errorMessage?: string;
  /** 408 only: the nodes that applied their share before the deadline (a change is confirmed when a majority of its replicas did). */
  appliedNodes?: string[];
}

/** A batch outcome in the compact form. */
export function batchOutcomeMemo(
  outcome: { status: BatchOutcomeMemo['status']; errorMessage?: string },
  appliedNodes: readonly string[],
): BatchOutcomeMemo {
  return {
    status: outcome.status,
    ...(outcome.errorMessage === undefined ? {} : { errorMessage: outcome.errorMessage }),
    ...(outcome.status === 408 ? { appliedNodes: [...appliedNodes] } : {}),
  };
}

/**
 * The HTTP outcome from the memo, the batch's changes (EIP-55) and each change's replicas (the
 * API's, which the workflow used): every change confirmed for 200; for 408 those applied by a
 * majority of their replicas (of the nodes the memo names), in request order; none for 403 and 500.
 */
export function outcomeOfMemo(
  memo: BatchOutcomeMemo,
  changes: readonly WhitelistChange[],
  replicas: readonly (readonly string[])[],
): BatchOutcome {
  const applied = new Set(memo.appliedNodes ?? []);
  const held = (i: number) => replicas[i].filter((node) => applied.has(node)).length >= majorityOf(replicas[i].length);
  const confirmed = memo.status === 200 ? changes : memo.status === 408 ? changes.filter((_, i) => held(i)) : [];
  return {
    status: memo.status,
    confirmations: confirmed.map(confirmationOfChecksummed),
    ...(memo.errorMessage === undefined ? {} : { errorMessage: memo.errorMessage }),
  };
}
