import type { HoldReason, RefundRow, RefundState } from '../../contracts/refunds';

/** What the record's answer and its event stream show of one of its refunds ledger rows: the depositor's view, no operator fields. */
export interface RefundSummary {
  id: string;
  txHash: string;
  transferIndex: number;
  asset?: string;
  amount?: string;
  reason: string;
  state: RefundState;
  holdReason?: HoldReason;
  refundTxHash?: string;
  refundValue?: string;
}

/** Rows of the refunds ledger a single record's answer lists and its event stream follows (oldest first). */
export const RECORD_REFUND_ROWS = 10;

export function refundSummary(row: RefundRow): RefundSummary {
  return {
    id: row.id,
    txHash: row.txHash,
    transferIndex: row.transferIndex,
    ...(row.asset === undefined ? {} : { asset: row.asset }),
    ...(row.amount === undefined ? {} : { amount: row.amount }),
    reason: row.reason,
    state: row.state,
    ...(row.holdReason === undefined ? {} : { holdReason: row.holdReason }),
    ...(row.refundTxHash === undefined ? {} : { refundTxHash: row.refundTxHash }),
    ...(row.refundValue === undefined ? {} : { refundValue: row.refundValue }),
  };
}
