import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import type { Database } from './database';
import type { Deposit, ExecutionRecord, RefusedDeposit } from '../domain/execution-state';

/** A deposit the service did not take, as whoever saw the refusal reports it. */
export interface RefundDue {
  workflowId: string;
  wallet: string;
  executionId: string;
  chain?: string;
  txHash: string;
  transferIndex?: number;
  amount?: string;
  asset?: string;
  /** A refusal reason of the execution record (`expired`, `cancelled`, `other-tx`, …), or `closed`. */
  reason: string;
  /** Who saw the refusal: the API (a report to a closed execution), the chain watcher, or the execution (its projection). */
  reportedBy: 'api' | 'chain-watcher' | 'execution';
}

export interface RefundRow extends Required<Omit<RefundDue, 'chain' | 'amount' | 'asset'>> {
  id: string;
  chain?: string;
  amount?: string;
  asset?: string;
  state: 'due';
  createdAt: string;
}

/** The row id of a transfer refused by an execution: the same transfer reported again is the same row. */
export function refundId(due: Pick<RefundDue, 'workflowId' | 'chain' | 'txHash' | 'transferIndex'>): string {
  const key = [due.workflowId, due.chain ?? '', due.txHash.toLowerCase(), String(due.transferIndex ?? 0)].join('\n');
  return bytesToHex(sha256(utf8ToBytes(key))).slice(0, 32);
}

/**
 * The ledger rows an execution's record owes: each refused deposit it holds, `overflow` (refusals
 * past what a record keeps), and its own deposit when a cancel made it `refundDue`.
 */
export function refundsOfRecord(workflowId: string, record: ExecutionRecord, overflow: readonly RefusedDeposit[]): RefundDue[] {
  const row = (d: Deposit, reason: string): RefundDue => ({
    workflowId,
    wallet: record.wallet,
    executionId: record.executionId,
    ...(d.chain === undefined ? {} : { chain: d.chain }),
    txHash: d.txHash,
    ...(d.transferIndex === undefined ? {} : { transferIndex: d.transferIndex }),
    ...(d.amount === undefined ? {} : { amount: d.amount }),
    asset: record.depositTarget?.asset ?? 'native',
    reason,
    reportedBy: 'execution',
  });
  const rows = [...record.refusedDeposits, ...overflow].map((r) => row(r, r.reason));
  if (record.deposit?.refundDue) rows.push(row(record.deposit, 'cancelled-after-deposit'));
  return rows;
}

/**
 * The refunds ledger in the read model's `refunds` table: one row per deposit the service did not
 * take after its execution closed, so that money on the chain always has a row saying whose it is.
 */
export class RefundLedger {
  constructor(private readonly database: Database) {}

  /** Records a refund as due; idempotent (a repeat of the same transfer keeps the first row). Returns its id. */
  async recordDue(due: RefundDue, now = new Date()): Promise<string> {
    const id = refundId(due);
    await this.database.db
      .insertInto('refunds')
      .values({
        id,
        workflow_id: due.workflowId,
        wallet: due.wallet,
        execution_id: due.executionId,
        chain: due.chain ?? null,
        tx_hash: due.txHash,
        transfer_index: due.transferIndex ?? 0,
        amount: due.amount ?? null,
        asset: due.asset ?? null,
        reason: due.reason,
        reported_by: due.reportedBy,
        state: 'due',
        created_at: now.toISOString(),
      })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
    return id;
  }

  /** The rows of one execution, oldest first. */
  async ofExecution(workflowId: string): Promise<RefundRow[]> {
    const rows = await this.database.db
      .selectFrom('refunds')
      .selectAll()
      .where('workflow_id', '=', workflowId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map((r) => ({
      id: r.id,
      workflowId: r.workflow_id,
      wallet: r.wallet,
      executionId: r.execution_id,
      ...(r.chain === null ? {} : { chain: r.chain }),
      txHash: r.tx_hash,
      transferIndex: r.transfer_index,
      ...(r.amount === null ? {} : { amount: r.amount }),
      ...(r.asset === null ? {} : { asset: r.asset }),
      reason: r.reason,
      reportedBy: r.reported_by as RefundDue['reportedBy'],
      state: 'due',
      createdAt: r.created_at,
    }));
  }
}
