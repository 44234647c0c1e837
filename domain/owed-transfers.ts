import type { DepositSignal } from './chain-watcher';
import { applyDeposit, closedDepositRefusal, holds, type ExecutionRecord, type RefusedDeposit } from './execution-state';

/**
 * Which transfers the chain watcher signals to their execution and which it owes back through the
 * refunds ledger instead, and why: the rules, without the reads and writes around them
 * (activities/chain.ts sortDeposits and reportSignals).
 */

/**
 * Transfers below its minAmount that the watcher signals for one deposit address; later ones go to
 * the refunds ledger without a signal (a warning and `intent_chain_dust_ignored_total`). Such a
 * transfer can never complete a deposit, and each signalled one is a history event and a read-model
 * write of its execution: without a cap, anyone who reads an address could grow its execution with 1-wei
 * transfers.
 */
export const DUST_TRANSFERS_PER_ADDRESS = 10;

/** A signal owed back instead of sent: why (for the logs), and whether it is dust (its row held too small to pay back without a person). */
export interface OwedSignal {
  reason: string;
  tooSmall?: true;
}

/**
 * What becomes of one signal of a round, judged on its execution's record in the read model
 * (undefined: none written yet): `send` it; `owed` back without a signal; `dust` (below the
 * minimum or of another asset: it can never complete the deposit) is sent while its address has
 * signals of its share left (DUST_TRANSFERS_PER_ADDRESS), else owed (pastDustShare); `skip` the
 * execution's own deposit it already holds.
 * What the read model shows never stops being true (a held deposit, a final status), so a record
 * that lags can only send a signal the execution then refuses itself.
 */
export function signalVerdict(
  record: ExecutionRecord | undefined,
  signal: DepositSignal,
  at: string,
):
  | { verdict: 'send' | 'skip' }
  | ({ verdict: 'owed' } & OwedSignal)
  | { verdict: 'dust'; outcome: 'refused-below-minimum' | 'refused-wrong-asset' } {
  // A batch can never be a deposit, however much it sums to: owed back as one row.
  if (signal.surplus)
    return {
      verdict: 'owed',
      reason: `${signal.transfers} transfers in one block past the first the address could take (a surplus batch)`,
    };
  if (signal.transfers !== undefined)
    return { verdict: 'owed', reason: `${signal.transfers} transfers in one block the address cannot take (a dust batch)`, tooSmall: true };
  const { outcome } = record ? applyDeposit(record, signal.deposit, at) : { outcome: 'applied' as const };
  if (outcome === 'refused-other-tx' || outcome === 'refused-expired' || outcome === 'refused-cancelled')
    return { verdict: 'owed', reason: `the execution cannot take it (${outcome})` };
  // Neither can ever complete the deposit: both count against the address's share.
  if (outcome === 'refused-below-minimum' || outcome === 'refused-wrong-asset') return { verdict: 'dust', outcome };
  // The execution's own transfer, mined again after a reorganisation: it hears it (to clear its mark).
  if (outcome !== 'duplicate' || (record !== undefined && !holds(record, signal.deposit))) return { verdict: 'send' };
  return { verdict: 'skip' };
}

/**
 * Splits the signals a round would send so that each execution hears at most one that could
 * become its deposit: the first in chain order (`send` keeps the round's order). An execution
 * takes one deposit, the first it hears, and Temporal does not deliver signals of one task to one
 * workflow in the order they were sent, so a block's later transfer could otherwise win over its
 * first; the later ones (`later`) are owed back as another transaction's, as the execution would
 * refuse them. `mayBeDeposit` tells a signal that could become the deposit (the execution holds
 * none yet) from one it hears for another reason (its own deposit mined again), always sent.
 */
export function firstPerExecution<S extends DepositSignal>(
  signals: readonly S[],
  mayBeDeposit: (s: S) => boolean,
): { send: S[]; later: S[] } {
  const heard = new Set<string>();
  const send: S[] = [];
  const later: S[] = [];
  for (const s of signals) {
    if (!mayBeDeposit(s)) send.push(s);
    else if (heard.has(s.workflowId)) later.push(s);
    else {
      heard.add(s.workflowId);
      send.push(s);
    }
  }
  return { send, later };
}

/** A dust signal owed back because its address had its share of signalled ones. */
export const pastDustShare = (outcome: 'refused-below-minimum' | 'refused-wrong-asset'): OwedSignal => ({
  reason: `${outcome.slice('refused-'.length)}, past the address share of signalled ones`,
  tooSmall: true,
});

/** Why a dust batch is owed: below the minimum in the address's asset, else another asset. */
export function dustBatchReason(record: ExecutionRecord | undefined, deposit: { asset?: string }): 'below-minimum' | 'wrong-asset' {
  const wanted = record?.depositTarget?.asset ?? 'native';
  return (deposit.asset ?? 'native').toLowerCase() === wanted.toLowerCase() ? 'below-minimum' : 'wrong-asset';
}

/**
 * The reason of the refunds ledger row of a signal that could not be delivered, judged on the
 * execution's final record by the execution's own rule (`closed` without a record); undefined
 * when it is the execution's own deposit again, which is no refund.
 */
export function owedReason(
  signal: DepositSignal,
  record: ExecutionRecord | undefined,
  at: string,
): RefusedDeposit['reason'] | 'closed' | undefined {
  // Its execution takes one deposit, and the block's earlier transfers came first.
  if (signal.surplus) return 'other-tx';
  if (signal.transfers !== undefined) return dustBatchReason(record, signal.deposit);
  return record ? closedDepositRefusal(record, signal.deposit, at) : 'closed';
}

/** Whether an owed transfer is dust (a dust batch, or past its address's share): never paid back without a person. */
export const isDust = (owed: { signal: DepositSignal; tooSmall?: true }): boolean =>
  (owed.signal.transfers !== undefined && !owed.signal.surplus) || owed.tooSmall === true;
