import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import type { Selectable } from 'kysely';
import type { Database } from './database';
import type { RefundsTable } from './tables';
import type { RefundDue, RefundRow, RefundState, Settlement, VoidReason } from '../contracts/refunds';
import { WEI } from '../domain/wei';
import type { LedgerPosition } from './page-token';
import type { Deposit, ExecutionRecord, RefusedDeposit } from '../domain/execution-state';
import type { PayerKind } from '../domain/payer-kind';

export type { RefundDue, RefundRow, RefundState, Settlement, VoidReason } from '../contracts/refunds';

/** A settle call's result: `settled` now, or `same` (this very settlement was recorded before: nothing written). */
export type SettleOutcome =
  { outcome: 'settled' | 'same'; row: RefundRow } | { outcome: 'conflict'; row: RefundRow } | { outcome: 'missing' };

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
    asset: d.asset ?? record.depositTarget?.asset ?? 'native',
    reason,
    reportedBy: 'execution',
  });
  const rows = [...record.refusedDeposits, ...overflow].map((r) => row(r, r.reason));
  if (record.deposit?.refundDue) rows.push(row(record.deposit, 'cancelled-after-deposit'));
  return rows;
}

/**
 * The refunds ledger in the read model's `refunds` table: one row per deposit the service did not
 * take, whoever saw the refusal (the execution's projection, the API, the chain watcher), so that
 * money on the chain always has a row saying whose it is, and paying it back is recorded once.
 */
export class RefundLedger {
  constructor(private readonly database: Database) {}

  /**
   * Records a refund as due; idempotent (a repeat of the same transfer keeps the first row, and
   * only fills in its sender when the first writer did not know it). Returns its id.
   */
  async recordDue(due: RefundDue, now = new Date()): Promise<string> {
    // Zero moves nothing and is never owed; an amount is base units in canonical decimal.
    if (due.amount !== undefined && (!WEI.test(due.amount) || due.amount === '0'))
      throw new Error(`a refunds ledger amount must be positive base units in canonical decimal, not ${JSON.stringify(due.amount)}`);
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
        sender: due.sender?.toLowerCase() ?? null,
        payer_kind: due.payerKind ?? null,
        reason: due.reason,
        reported_by: due.reportedBy,
        transfers: due.transfers ?? 1,
        hold_reason: due.holdReason ?? null,
        state: 'due',
        created_at: now.toISOString(),
      })
      .onConflict((oc) =>
        due.sender === undefined
          ? oc.column('id').doNothing()
          : oc
              .column('id')
              .doUpdateSet({ sender: (eb) => eb.ref('excluded.sender'), payer_kind: (eb) => eb.ref('excluded.payer_kind') })
              .where('refunds.sender', 'is', null),
      )
      .execute();
    return id;
  }

  /** The ids among `ids` that have a row already. */
  async existing(ids: readonly string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.database.db
      .selectFrom('refunds')
      .select('id')
      .where('id', 'in', [...ids])
      .execute();
    return new Set(rows.map((r) => r.id));
  }

  /** How many rows each execution has (executions with none are absent). */
  async countsOf(workflowIds: readonly string[]): Promise<Map<string, number>> {
    if (workflowIds.length === 0) return new Map();
    const rows = await this.database.db
      .selectFrom('refunds')
      .select(['workflow_id', (eb) => eb.fn.countAll<number | string>().as('n')])
      .where('workflow_id', 'in', [...workflowIds])
      .groupBy('workflow_id')
      .execute();
    return new Map(rows.map((r) => [r.workflow_id, Number(r.n)]));
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
    return rows.map(toRow);
  }

  /**
   * Rows with a state change not handed over yet (their refund.due or refund.voided webhook), oldest
   * first, each with its event number: odd is `due`, even `void`.
   */
  async unannounced(limit: number): Promise<Array<RefundRow & { event: number; announcedEvents: number }>> {
    const rows = await this.database.db
      .selectFrom('refunds')
      .selectAll()
      .whereRef('announced_events', '<', 'events')
      .orderBy('created_at')
      .orderBy('id')
      .limit(limit)
      .execute();
    return rows.map((r) => ({ ...toRow(r), event: r.events, announcedEvents: r.announced_events }));
  }

  /** Marks rows' state changes up to `event` as handed over. */
  async markAnnounced(rows: ReadonlyArray<{ id: string; event: number }>, now = new Date()): Promise<void> {
    for (const { id, event } of rows)
      await this.database.db
        .updateTable('refunds')
        .set({ announced_at: now.toISOString(), announced_events: event })
        .where('id', '=', id)
        .where('announced_events', '<', event)
        .execute();
  }

  /**
   * Takes rows out of `due` because the chain no longer holds their transfer (a reorganisation):
   * `void`, with the reason and when, and a refund.voided announcement owed. Settled rows stay as
   * they are (the answer lists the ids that were not due, for the caller to raise). Idempotent.
   */
  async void(ids: readonly string[], reason: VoidReason, now = new Date()): Promise<{ voided: string[]; settled: string[] }> {
    if (ids.length === 0) return { voided: [], settled: [] };
    const voided = await this.database.db
      .updateTable('refunds')
      .set((eb) => ({ state: 'void', voided_at: now.toISOString(), void_reason: reason, events: eb('events', '+', 1) }))
      .where('id', 'in', [...ids])
      .where('state', '=', 'due')
      .returning('id')
      .execute();
    const settled = await this.database.db
      .selectFrom('refunds')
      .select('id')
      .where('id', 'in', [...ids])
      .where('state', 'in', ['refunded', 'waived'])
      .execute();
    return { voided: voided.map((r) => r.id), settled: settled.map((r) => r.id) };
  }

  /**
   * Puts `void` rows whose transfer the chain holds again, confirmed, back to `due` (a refund.due
   * announced again). Only the chain watcher calls it, after the transfer's confirmations. Answers
   * the ids restored.
   */
  async restore(ids: readonly string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const rows = await this.database.db
      .updateTable('refunds')
      .set((eb) => ({ state: 'due', voided_at: null, void_reason: null, events: eb('events', '+', 1) }))
      .where('id', 'in', [...ids])
      .where('state', '=', 'void')
      .returning('id')
      .execute();
    return rows.map((r) => r.id);
  }

  /** One row, or undefined. */
  async get(id: string): Promise<RefundRow | undefined> {
    const row = await this.database.db.selectFrom('refunds').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toRow(row);
  }

  /** One page of rows, newest first, filtered by state, wallet and chain. */
  async list(options: {
    state?: RefundState;
    wallet?: string;
    executionId?: string;
    chain?: string;
    pageSize: number;
    after?: LedgerPosition;
  }): Promise<{ rows: RefundRow[]; next?: LedgerPosition }> {
    let query = this.database.db.selectFrom('refunds').selectAll();
    if (options.state !== undefined) query = query.where('state', '=', options.state);
    if (options.wallet !== undefined) query = query.where('wallet', '=', options.wallet);
    if (options.executionId !== undefined) query = query.where('execution_id', '=', options.executionId);
    if (options.chain !== undefined) query = query.where('chain', '=', options.chain);
    const after = options.after;
    if (after) {
      query = query.where((eb) =>
        eb.or([eb('created_at', '<', after.createdAt), eb.and([eb('created_at', '=', after.createdAt), eb('id', '<', after.id)])]),
      );
    }
    const rows = await query
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(options.pageSize + 1)
      .execute();
    const page = rows.slice(0, options.pageSize).map(toRow);
    const last = page[page.length - 1];
    return rows.length > options.pageSize && last ? { rows: page, next: { createdAt: last.createdAt, id: last.id } } : { rows: page };
  }

  /**
   * Records that a due refund was paid or waived, once: a row still `due` takes the settlement (one
   * conditional UPDATE, so two operators settling at once cannot both win); a row already settled
   * the same way answers `same`; settled another way, `conflict`.
   */
  async settle(id: string, settlement: Settlement, settledBy: string, now = new Date()): Promise<SettleOutcome> {
    const result = await this.database.db
      .updateTable('refunds')
      .set({
        state: settlement.state,
        settled_at: now.toISOString(),
        settled_by: settledBy,
        refund_tx_hash: settlement.state === 'refunded' ? settlement.txHash : null,
        waived_reason: settlement.state === 'waived' ? settlement.reason : null,
      })
      .where('id', '=', id)
      .where('state', '=', 'due')
      .executeTakeFirst();
    const row = await this.get(id);
    if (!row) return { outcome: 'missing' };
    if (Number(result.numUpdatedRows) === 1) return { outcome: 'settled', row };
    const same =
      row.state === settlement.state &&
      (settlement.state === 'refunded' ? row.refundTxHash === settlement.txHash : row.waivedReason === settlement.reason);
    return { outcome: same ? 'same' : 'conflict', row };
  }
}

function toRow(r: Selectable<RefundsTable>): RefundRow {
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
    ...(r.hold_reason === null ? {} : { holdReason: r.hold_reason as RefundDue['holdReason'] }),
    ...(r.voided_at === null ? {} : { voidedAt: r.voided_at }),
    ...(r.void_reason === null ? {} : { voidReason: r.void_reason as VoidReason }),
  };
}
