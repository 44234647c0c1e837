import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import type { Selectable } from 'kysely';
import type { HoldReason, RefundDue, RefundRow, RefundState, RefundVariant, VoidReason } from '../contracts/refunds';
import type { Database } from './database';
import type { RefundsTable } from './tables';
import type { Deposit, ExecutionRecord, RefusedDeposit } from '../domain/execution-state';
import type { PayerKind } from '../domain/payer-kind';
import { isBaseUnits } from '../domain/wei';

// A refunds ledger row: its id (one per transfer), the rows an execution's record owes, and a row
// of the `refunds` table as the ledger answers it.

/**
 * The row id of a transfer refused by an execution: the same transfer reported again is the same
 * row. A token's transfer adds its asset (a native transfer and a token log of one transaction may
 * share an index); a native one keeps the id it always had.
 */
export function refundId(due: Pick<RefundDue, 'workflowId' | 'chain' | 'txHash' | 'transferIndex' | 'asset'>): string {
  const parts = [due.workflowId, due.chain ?? '', due.txHash.toLowerCase(), String(due.transferIndex ?? 0)];
  if (due.asset !== undefined && due.asset !== 'native') parts.push(due.asset.toLowerCase());
  const key = parts.join('\n');
  return bytesToHex(sha256(utf8ToBytes(key))).slice(0, 32);
}

/**
 * The ledger rows an execution's record owes: each refused deposit it holds, `overflow` (refusals
 * past what a record keeps), and its own deposit when a cancel made it `refundDue`. A transfer the
 * record holds flagged `reorged` is a `void` row: recorded, owed to nobody.
 */
export function refundsOfRecord(workflowId: string, record: ExecutionRecord, overflow: readonly RefusedDeposit[]): RefundDue[] {
  const row = (d: Deposit & { reorged?: true }, reason: string): RefundDue => ({
    workflowId,
    wallet: record.wallet,
    executionId: record.executionId,
    ...(d.chain === undefined ? {} : { chain: d.chain }),
    txHash: d.txHash,
    ...(d.transferIndex === undefined ? {} : { transferIndex: d.transferIndex }),
    // A record written before amounts were checked at every entry point may hold another spelling
    // (a trusted report's "0099.5"): its row is still owed, its amount unknown, never that text.
    ...(isBaseUnits(d.amount) ? { amount: d.amount } : {}),
    asset: d.asset ?? record.depositTarget?.asset ?? 'native',
    reason,
    reportedBy: 'execution',
    // Money a reorganisation removed is owed to nobody, whatever closed the execution since.
    ...(d.reorged ? { voidReason: 'reorged' as const } : {}),
  });
  const rows = [...record.refusedDeposits, ...overflow].map((r) => row(r, r.reason));
  if (record.deposit?.refundDue)
    rows.push(row(record.deposit, record.status === 'EXPIRED' ? 'unsigned-by-deadline' : 'cancelled-after-deposit'));
  return rows;
}

export function toRow(r: Selectable<RefundsTable>): RefundRow {
  return {
    id: r.id,
    workflowId: r.workflow_id,
    wallet: r.wallet,
    executionId: r.execution_id,
    ...(r.chain === null ? {} : { chain: r.chain }),
    txHash: r.tx_hash,
    transferIndex: r.transfer_index,
    ...(r.amount === null ? {} : { amount: r.amount }),
    ...(r.asset === null ? {} : { asset: r.asset }),
    ...(r.sender === null ? {} : { sender: r.sender }),
    ...(r.payer_kind === null ? {} : { payerKind: r.payer_kind as PayerKind }),
    reason: r.reason,
    reportedBy: r.reported_by as RefundDue['reportedBy'],
    state: r.state as RefundState,
    createdAt: r.created_at,
    ...(r.settled_at === null ? {} : { settledAt: r.settled_at }),
    ...(r.settled_by === null ? {} : { settledBy: r.settled_by }),
    ...(r.refund_tx_hash === null ? {} : { refundTxHash: r.refund_tx_hash }),
    ...(r.waived_reason === null ? {} : { waivedReason: r.waived_reason }),
    transfers: r.transfers,
    ...(r.hold_reason === null ? {} : { holdReason: r.hold_reason as HoldReason }),
    ...(r.voided_at === null ? {} : { voidedAt: r.voided_at }),
    ...(r.void_reason === null ? {} : { voidReason: r.void_reason as VoidReason }),
    ...(r.refund_nonce === null ? {} : { refundNonce: r.refund_nonce }),
    ...(r.refund_to === null ? {} : { refundTo: r.refund_to }),
    ...(r.refund_variants === null ? {} : { refundVariants: JSON.parse(r.refund_variants) as RefundVariant[] }),
    ...(r.refund_block === null ? {} : { refundBlock: Number(r.refund_block) }),
    ...(r.refund_value === null ? {} : { refundValue: r.refund_value }),
    ...(r.fees_spent === null ? {} : { feesSpent: r.fees_spent }),
    ...(r.gas_left === null ? {} : { gasLeft: r.gas_left }),
    ...(r.approved_by === null ? {} : { approvedBy: r.approved_by }),
    ...(r.approved_at === null ? {} : { approvedAt: r.approved_at }),
  };
}

/** One row of the `refunds` table, or undefined. */
export async function readRefundRow(database: Database, id: string): Promise<RefundRow | undefined> {
  const row = await database.db.selectFrom('refunds').selectAll().where('id', '=', id).executeTakeFirst();
  return row && toRow(row);
}
