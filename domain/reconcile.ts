import type { RefundState } from './refund-states';
import { sameTransfer, type DepositAsset, type ExecutionRecord } from './execution-state';

/**
 * Reconciliation of one chain's deposits (npm run reconcile): every transfer the chain shows to a
 * deposit address is an execution's deposit (taken) or a refunds ledger row (due, refunded or
 * waived), unless a deposit address paid it (the service's own refund or cancel: labelled a
 * refund); every deposit an execution took is on the chain; every refund the service recorded
 * paid is on the chain as recorded. Pure: scripts/reconcile.ts reads the chain and the read model.
 */

/** A confirmed transfer to a deposit address (native, top-level or by an internal call, or a token's), as the chain shows it. */
export interface InboundTransfer {
  workflowId: string;
  txHash: string;
  transferIndex: number;
  /** Base units of `asset`. */
  amount: string;
  blockNumber: number;
  /** `native` or `erc20:<token address>`; unset: native. */
  asset?: string;
  /** Its payer, lowercase, when the reader knows it. */
  from?: string;
}

/** A refund the service paid and recorded (RefundPayments.paidBy, `refunded` with its mined transaction). */
export interface PaidRefund {
  id: string;
  workflowId: string;
  /** The mined variant (refundTxHash). */
  txHash: string;
  /** Where it went (refundTo) and what it paid (refundValue, in the asset's base units). */
  to: string;
  value: string;
  /** `erc20:<token address>` for a token refund (checked by its Transfer log); unset: native. */
  asset?: string;
  /** The block the refunder saw it mined in (refundBlock). */
  block?: number;
}

/** What the chain holds of a refund's transaction: undefined when it knows none by that hash. */
export interface RefundOnChain {
  /** Lowercase; null for a contract creation. */
  to: string | null;
  /** Wei, a decimal string. */
  value: string;
  /** Null while pending. */
  blockNumber: number | null;
  succeeded: boolean;
  /** The standard ERC-20 Transfer logs of its receipt (token and addresses lowercase). */
  tokenTransfers?: ReadonlyArray<{ token: string; from: string; to: string; amount: string }>;
}

/** A paid refund the chain contradicts, and how. */
export interface MissingRefund extends PaidRefund {
  why: 'not-found' | 'pending' | 'failed' | 'other-recipient' | 'other-value';
  chainTo?: string | null;
  chainValue?: string;
}

/** The service's own transfers and refunds, for reconcile to tell them from money in and check them. */
export interface ServiceFacts {
  /** Every deposit address and gas account of the chain, lowercase: a transfer one of them paid is the service's own (a refund, a cancel, a gas top-up). */
  depositAddresses?: ReadonlySet<string>;
  /** The refunds the service recorded paid on the chain. */
  refundsPaid?: readonly PaidRefund[];
  /** The chain's word on each of their transactions, by lowercase hash. */
  refundTxs?: ReadonlyMap<string, RefundOnChain | undefined>;
}

/** A refunds ledger row, as far as reconciliation needs it. */
export interface LedgerEntry {
  id?: string;
  workflowId: string;
  txHash: string;
  transferIndex: number;
  asset?: string;
  amount?: string;
  state: RefundState;
}

/**
 * One ledger row judged against the chain: `present` (the chain shows its transfer, same amount),
 * `absent` (it does not: a reorganisation removed it, or it is on no chain read), `amount-differs`.
 */
export interface LedgerVerdict {
  id?: string;
  workflowId: string;
  txHash: string;
  transferIndex: number;
  state: LedgerEntry['state'];
  verdict: 'present' | 'absent' | 'amount-differs';
  chainAmount?: string;
  ledgerAmount?: string;
}

type Sums = { in: string; taken: string; due: string; refunded: string; waived: string; unaccounted: string };

export interface ReconcileReport {
  /** Sums in wei (decimal strings) of the native transfers the chain shows, by where each went. */
  sums: Sums;
  /** The same sums for each token (`erc20:<address>`), in its base units. */
  tokenSums: Record<string, Sums>;
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
  /** Every ledger row against the chain, and how many of each verdict. */
  ledger: LedgerVerdict[];
  ledgerCounts: Record<LedgerVerdict['verdict'], number>;
  /**
   * Rows whose state the chain contradicts: a `due`, `refunded` or `waived` row whose transfer is
   * absent or of another amount, a `void` row whose transfer is present. Judged only over the whole
   * chain (from block 0): a row of an earlier block is absent from a partial range.
   */
  ledgerContradicted: LedgerVerdict[];
  /**
   * Transfers to a deposit address that a deposit address paid: the service's own (a refund whose
   * destination is a deposit address, a cancel), labelled refunds: never money in, never owed.
   */
  refundTransfers: InboundTransfer[];
  /**
   * The refunds the service recorded paid, each checked on the chain: `confirmed`, its mined
   * transaction succeeded paying refundTo exactly refundValue (with the other rows it paid, their
   * refundValues added up); `missing`, the chain shows otherwise
   * (a contradiction, counted against `balanced` over the whole chain, from block 0).
   */
  refundsPaid: { confirmed: number; missing: MissingRefund[] };
  balanced: boolean;
}

const assetOf = (t: { asset?: string }) => (t.asset ?? 'native').toLowerCase();
const key = (t: { workflowId: string; txHash: string; transferIndex?: number; asset?: string }) =>
  `${t.workflowId}\n${t.txHash.toLowerCase()}\n${t.transferIndex ?? 0}\n${assetOf(t)}`;

/**
 * Judges every transfer of `inbound` (blocks `range`) against the records and the ledger, and the
 * service's recorded refunds against the chain (`service`). `records` holds every execution with
 * a deposit address on this chain, so that a deposit taken in the range and missing from the chain
 * is found too.
 */
export function reconcile(
  inbound: readonly InboundTransfer[],
  records: ReadonlyMap<string, ExecutionRecord>,
  ledger: readonly LedgerEntry[],
  range: { from: number; to: number },
  service: ServiceFacts = {},
): ReconcileReport {
  const byService = (t: InboundTransfer) => t.from !== undefined && service.depositAddresses?.has(t.from.toLowerCase()) === true;
  const transfers = inbound.filter((t) => !byService(t));
  const refundTransfers = inbound.filter(byService);
  const rows = new Map(ledger.map((r) => [key(r), r]));
  const onChain = new Map(transfers.map((t) => [key(t), t]));
  const byAsset = new Map<string, { in: bigint; taken: bigint; due: bigint; refunded: bigint; waived: bigint; unaccounted: bigint }>();
  const sumsOf = (asset: string) => {
    let sums = byAsset.get(asset);
    if (!sums) byAsset.set(asset, (sums = { in: 0n, taken: 0n, due: 0n, refunded: 0n, waived: 0n, unaccounted: 0n }));
    return sums;
  };
  sumsOf('native');
  const unaccounted: InboundTransfer[] = [];
  const seen = new Set<string>();
  for (const t of transfers) {
    const amount = BigInt(t.amount);
    const sums = sumsOf(assetOf(t));
    sums.in += amount;
    seen.add(key(t));
    const deposit = records.get(t.workflowId)?.deposit;
    const row = rows.get(key(t));
    if (
      deposit &&
      !deposit.reorged &&
      sameTransfer(
        { ...deposit, txHash: deposit.txHash.toLowerCase(), asset: deposit.asset ?? 'native' },
        { ...t, txHash: t.txHash.toLowerCase(), asset: assetOf(t) as DepositAsset },
      )
    )
      sums.taken += amount;
    // A held row, or one being paid, is owed until its refund is mined.
    else if (row && row.state !== 'void') sums[row.state === 'held' || row.state === 'paying' ? 'due' : row.state] += amount;
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
    const k = key({ workflowId, txHash: d.txHash, transferIndex: d.transferIndex, asset: d.asset });
    if (!seen.has(k))
      (d.reorged ? reorgedAway : takenNotOnChain).push({ workflowId, txHash: d.txHash, transferIndex: d.transferIndex ?? 0 });
  }
  const verdicts: LedgerVerdict[] = ledger.map((r) => {
    const t = onChain.get(key(r));
    const verdict = !t ? 'absent' : r.amount !== undefined && r.amount !== t.amount ? 'amount-differs' : 'present';
    return {
      ...(r.id === undefined ? {} : { id: r.id }),
      workflowId: r.workflowId,
      txHash: r.txHash,
      transferIndex: r.transferIndex,
      state: r.state,
      verdict,
      ...(t ? { chainAmount: t.amount } : {}),
      ...(r.amount === undefined ? {} : { ledgerAmount: r.amount }),
    };
  });
  const ledgerCounts = { present: 0, absent: 0, 'amount-differs': 0 };
  for (const v of verdicts) ledgerCounts[v.verdict]++;
  const ledgerContradicted =
    range.from === 0 ? verdicts.filter((v) => (v.state === 'void' ? v.verdict === 'present' : v.verdict !== 'present')) : [];
  const text = (sums: ReturnType<typeof sumsOf>): Sums => ({
    in: sums.in.toString(),
    taken: sums.taken.toString(),
    due: sums.due.toString(),
    refunded: sums.refunded.toString(),
    waived: sums.waived.toString(),
    unaccounted: sums.unaccounted.toString(),
  });
  const refundsPaid: ReconcileReport['refundsPaid'] = { confirmed: 0, missing: [] };
  // Rows of one address paid together share one transaction: it must pay what they add up to.
  const paidByTx = new Map<string, bigint>();
  for (const r of service.refundsPaid ?? [])
    paidByTx.set(r.txHash.toLowerCase(), (paidByTx.get(r.txHash.toLowerCase()) ?? 0n) + BigInt(r.value));
  for (const r of service.refundsPaid ?? []) {
    const value = paidByTx.get(r.txHash.toLowerCase())!.toString();
    const tx = service.refundTxs?.get(r.txHash.toLowerCase());
    // A token refund pays by its Transfer log: a log of the token to the destination must move the value.
    const token = r.asset?.startsWith('erc20:') ? r.asset.slice('erc20:'.length).toLowerCase() : undefined;
    const logs = (tx?.tokenTransfers ?? []).filter((t) => t.token === token);
    const paidTo = token === undefined ? [tx?.to?.toLowerCase()] : logs.map((t) => t.to);
    const why: MissingRefund['why'] | undefined = !tx
      ? 'not-found'
      : tx.blockNumber === null
        ? 'pending'
        : !tx.succeeded
          ? 'failed'
          : !paidTo.includes(r.to.toLowerCase())
            ? 'other-recipient'
            : token === undefined
              ? tx.value !== value
                ? 'other-value'
                : undefined
              : logs.some((t) => t.to === r.to.toLowerCase() && t.amount === value)
                ? undefined
                : 'other-value';
    if (why === undefined) refundsPaid.confirmed++;
    else refundsPaid.missing.push({ ...r, why, ...(tx ? { chainTo: tx.to, chainValue: tx.value } : {}) });
  }
  const refundsContradicted = range.from === 0 ? refundsPaid.missing.length : 0;
  return {
    sums: text(sumsOf('native')),
    tokenSums: Object.fromEntries([...byAsset].filter(([asset]) => asset !== 'native').map(([asset, sums]) => [asset, text(sums)])),
    transfers: transfers.length,
    unaccounted,
    takenNotOnChain,
    reorgedAway,
    ledger: verdicts,
    ledgerCounts,
    ledgerContradicted,
    refundTransfers,
    refundsPaid,
    balanced: unaccounted.length === 0 && takenNotOnChain.length === 0 && ledgerContradicted.length === 0 && refundsContradicted === 0,
  };
}
