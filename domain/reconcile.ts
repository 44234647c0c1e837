import { sameTransfer, type ExecutionRecord } from './execution-state';

/**
 * Reconciliation of one chain's deposits (npm run reconcile): every transfer the chain shows to a
 * deposit address is an execution's deposit (taken) or a refunds ledger row (due, refunded or
 * waived), and every deposit an execution took is on the chain. Pure: scripts/reconcile.ts reads
 * the chain and the read model.
 */

/** A confirmed top-level native transfer to a deposit address, as the chain shows it. */
export interface InboundTransfer {
  workflowId: string;
  txHash: string;
  transferIndex: number;
  amount: string;
  blockNumber: number;
}

/** A refunds ledger row, as far as reconciliation needs it. */
export interface LedgerEntry {
  workflowId: string;
  txHash: string;
  transferIndex: number;
  state: 'due' | 'refunded' | 'waived';
}

export interface ReconcileReport {
  /** Sums in base units (decimal strings) of the transfers the chain shows, by where each went. */
  sums: { in: string; taken: string; due: string; refunded: string; waived: string; unaccounted: string };
  transfers: number;
  /** Transfers neither taken nor in the ledger: money in that nobody accounts for. */
  unaccounted: InboundTransfer[];
  /** Deposits executions took, in the range read, that the chain does not show and nothing flagged. */
  takenNotOnChain: Array<{ workflowId: string; txHash: string; transferIndex: number }>;
  /**
   * Deposits the chain watcher already flagged `reorged` (an error log, intent_chain_deep_reorgs_total,
   * an operator's decision pending) and the chain does not show: listed, not counted as a difference.
   */
  reorgedAway: Array<{ workflowId: string; txHash: string; transferIndex: number }>;
  balanced: boolean;
}

const key = (t: { workflowId: string; txHash: string; transferIndex?: number }) =>
  `${t.workflowId}\n${t.txHash.toLowerCase()}\n${t.transferIndex ?? 0}`;

/**
 * Judges every transfer of `transfers` (blocks `range`) against the records and the ledger.
 * `records` holds every execution with a deposit address on this chain, so that a deposit taken
 * in the range and missing from the chain is found too.
 */
export function reconcile(
  transfers: readonly InboundTransfer[],
  records: ReadonlyMap<string, ExecutionRecord>,
  ledger: readonly LedgerEntry[],
  range: { from: number; to: number },
): ReconcileReport {
  const rows = new Map(ledger.map((r) => [key(r), r]));
  const sums = { in: 0n, taken: 0n, due: 0n, refunded: 0n, waived: 0n, unaccounted: 0n };
  const unaccounted: InboundTransfer[] = [];
  const seen = new Set<string>();
  for (const t of transfers) {
    const amount = BigInt(t.amount);
    sums.in += amount;
    seen.add(key(t));
    const deposit = records.get(t.workflowId)?.deposit;
    const row = rows.get(key(t));
    if (
      deposit &&
      !deposit.reorged &&
      sameTransfer({ ...deposit, txHash: deposit.txHash.toLowerCase() }, { ...t, txHash: t.txHash.toLowerCase() })
    )
      sums.taken += amount;
    else if (row) sums[row.state] += amount;
    else {
      sums.unaccounted += amount;
      unaccounted.push(t);
    }
  }
  const takenNotOnChain: ReconcileReport['takenNotOnChain'] = [];
  const reorgedAway: ReconcileReport['reorgedAway'] = [];
  for (const [workflowId, record] of records) {
    const d = record.deposit;
    if (!d || d.blockNumber === undefined || d.blockNumber < range.from || d.blockNumber > range.to) continue;
    const k = key({ workflowId, txHash: d.txHash, transferIndex: d.transferIndex });
    if (!seen.has(k))
      (d.reorged ? reorgedAway : takenNotOnChain).push({ workflowId, txHash: d.txHash, transferIndex: d.transferIndex ?? 0 });
  }
  const text = (n: bigint) => n.toString();
  return {
    sums: {
      in: text(sums.in),
      taken: text(sums.taken),
      due: text(sums.due),
      refunded: text(sums.refunded),
      waived: text(sums.waived),
      unaccounted: text(sums.unaccounted),
    },
    transfers: transfers.length,
    unaccounted,
    takenNotOnChain,
    reorgedAway,
    balanced: unaccounted.length === 0 && takenNotOnChain.length === 0,
  };
}
