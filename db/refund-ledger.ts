import { sql } from 'kysely';
import type { Database } from './database';
import type { HoldReason, RefundDue, RefundJudge, RefundRow, RefundState, Settlement, VoidReason } from '../contracts/refunds';
import type { LedgerPosition } from './page-token';
import { isBaseUnits } from '../domain/wei';
import { readRefundRow, refundId, toRow } from './refund-rows';
import { approveRefund, settleRefund, type SettleOutcome } from './refund-settlement';

export type { HoldReason, RefundDue, RefundRow, RefundState, RefundVariant, Settlement, VoidReason } from '../contracts/refunds';

/**
 * The refunds ledger in the read model's `refunds` table: one row per deposit the service did not
 * take, whoever saw the refusal (the execution's read-model write, the API, the chain watcher), so that
 * money on the chain always has a row saying whose it is, and paying it back is recorded once.
 */
export class RefundLedger {
  /**
   * @param judge asked about each row before it is written (not one already held or void): a row
   *   it holds `too-small` is dust, written held and announced to nobody (no refund.due, no
   *   refund.held), so that money scattered by an outsider starts no refund workflow and no webhook.
   */
  constructor(
    private readonly database: Database,
    private readonly judge?: RefundJudge,
  ) {}

  /**
   * Records a refund as due; idempotent (a repeat of the same transfer keeps the first row, and
   * only fills in its sender when the first writer did not know it). Returns its id.
   * An amount that is not base units (domain/wei.ts) throws: every entry point checks it first, so
   * one reaching here is a programming error, and no such text becomes money owed.
   */
  async recordDue(due: RefundDue, now = new Date()): Promise<string> {
    // Zero moves nothing and is never owed.
    if (due.amount !== undefined && (!isBaseUnits(due.amount) || due.amount === '0'))
      throw new TypeError(
        `refund amount ${JSON.stringify(String(due.amount).slice(0, 100))} is not base units of a positive amount (a decimal integer, 1 to 2^256 − 1): zero moves nothing and is never owed`,
      );
    const id = refundId(due);
    const dust =
      due.holdReason === undefined && due.voidReason === undefined && this.judge !== undefined && (await this.judge(due)) === 'too-small';
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
        hold_reason: dust ? 'too-small' : (due.holdReason ?? null),
        state: due.voidReason !== undefined ? 'void' : due.holdReason === undefined && !dust ? 'due' : 'held',
        created_at: now.toISOString(),
        // Void from the start: its due and void events count as announced, since nobody was ever told it was owed.
        ...(due.voidReason === undefined
          ? {}
          : { void_reason: due.voidReason, voided_at: now.toISOString(), events: 2, announced_events: 2 }),
        ...(dust ? { announced_events: 1, held_announced: 'too-small' } : {}),
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

  /** The rows of one execution, oldest first (the first `limit`, when given). */
  async ofExecution(workflowId: string, limit?: number): Promise<RefundRow[]> {
    const rows = await this.database.db
      .selectFrom('refunds')
      .selectAll()
      .where('workflow_id', '=', workflowId)
      .orderBy('created_at')
      .orderBy('id')
      .$if(limit !== undefined, (q) => q.limit(limit!))
      .execute();
    return rows.map(toRow);
  }

  /**
   * The first `limit` rows of each execution (oldest first, as `ofExecution`), in one read per 500
   * executions; executions without rows are absent.
   */
  async firstOfExecutions(workflowIds: readonly string[], limit: number): Promise<Map<string, RefundRow[]>> {
    const found = new Map<string, RefundRow[]>();
    for (let i = 0; i < workflowIds.length; i += 500) {
      const rows = await this.database.db
        .selectFrom((eb) =>
          eb
            .selectFrom('refunds')
            .selectAll()
            .select(sql<number>`row_number() over (partition by workflow_id order by created_at, id)`.as('place'))
            .where('workflow_id', 'in', workflowIds.slice(i, i + 500))
            .as('r'),
        )
        .selectAll()
        .where('place', '<=', limit)
        .orderBy('workflow_id')
        .orderBy('place')
        .execute();
      for (const { place: _place, ...row } of rows) {
        const list = found.get(row.workflow_id) ?? [];
        list.push(toRow(row));
        found.set(row.workflow_id, list);
      }
    }
    return found;
  }

  /**
   * The rows of the transfers of transaction `txHash` (any case: a report may have stored another)
   * on `chain`, whichever executions they belong to, by transfer index (then row id).
   */
  async ofTransaction(chain: string, txHash: string): Promise<RefundRow[]> {
    const rows = await this.database.db
      .selectFrom('refunds')
      .selectAll()
      .where((eb) => eb(eb.fn('lower', ['tx_hash']), '=', txHash.toLowerCase()))
      .where('chain', '=', chain)
      .orderBy('transfer_index')
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

  /** Refunded rows whose refund.paid webhook was not handed over yet, oldest settlement first. */
  async unannouncedPaid(limit: number): Promise<RefundRow[]> {
    const rows = await this.database.db
      .selectFrom('refunds')
      .selectAll()
      .where('state', '=', 'refunded')
      .where('paid_announced_at', 'is', null)
      .orderBy('settled_at')
      .orderBy('id')
      .limit(limit)
      .execute();
    return rows.map(toRow);
  }

  /** Held rows whose hold (their reason now) was not handed to a refund.held webhook yet, oldest first. */
  async unannouncedHeld(limit: number): Promise<RefundRow[]> {
    const rows = await this.database.db
      .selectFrom('refunds')
      .selectAll()
      .where('state', '=', 'held')
      .where('hold_reason', 'is not', null)
      .where((eb) => eb.or([eb('held_announced', 'is', null), eb('held_announced', '<>', eb.ref('hold_reason'))]))
      .orderBy('created_at')
      .orderBy('id')
      .limit(limit)
      .execute();
    return rows.map(toRow);
  }

  /** Marks rows' refund.held as handed over, for the reason each was announced with (a row held again for another reason is announced again). */
  async markHeldAnnounced(rows: ReadonlyArray<Pick<RefundRow, 'id' | 'holdReason'>>): Promise<void> {
    for (const row of rows) {
      if (row.holdReason === undefined) continue;
      await this.database.db
        .updateTable('refunds')
        .set({ held_announced: row.holdReason })
        .where('id', '=', row.id)
        .where('hold_reason', '=', row.holdReason)
        .execute();
    }
  }

  /** Marks rows' refund.paid as handed over. */
  async markPaidAnnounced(ids: readonly string[], now = new Date()): Promise<void> {
    if (ids.length === 0) return;
    await this.database.db
      .updateTable('refunds')
      .set({ paid_announced_at: now.toISOString() })
      .where('id', 'in', [...ids])
      .where('paid_announced_at', 'is', null)
      .execute();
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
   * Takes rows out of `due`, `held` or `paying` because the chain no longer holds their transfer (a
   * reorganisation): `void`, with the reason and when, and a refund.voided announcement owed (a
   * `paying` row keeps its transaction: the refunder takes the nonce back with a cancel). Settled
   * rows stay as they are (the answer lists them, for the caller to raise). Idempotent.
   */
  async void(ids: readonly string[], reason: VoidReason, now = new Date()): Promise<{ voided: string[]; settled: string[] }> {
    if (ids.length === 0) return { voided: [], settled: [] };
    const voided = await this.database.db
      .updateTable('refunds')
      .set((eb) => ({ state: 'void', voided_at: now.toISOString(), void_reason: reason, events: eb('events', '+', 1) }))
      .where('id', 'in', [...ids])
      .where('state', 'in', ['due', 'held', 'paying'])
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
   * Puts `void` rows whose transfer the chain holds again, confirmed, back where they were (a
   * refund.due announced again): `refunded` when a refund was mined for it while void, `paying`
   * while its transaction's nonce is not mined, `held` with its hold reason, else `due` (a cancel
   * mined while it was void is forgotten: a new refund is signed at a new nonce). Only the
   * chain watcher calls it, after the transfer's confirmations. Answers the ids restored.
   */
  async restore(ids: readonly string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const restored: string[] = [];
    const rows = await this.database.db
      .selectFrom('refunds')
      .select(['id', 'refund_tx_hash', 'refund_nonce', 'refund_block', 'hold_reason'])
      .where('id', 'in', [...ids])
      .where('state', '=', 'void')
      .execute();
    for (const r of rows) {
      const state: RefundState =
        r.refund_tx_hash !== null
          ? 'refunded'
          : r.refund_nonce !== null && r.refund_block === null
            ? 'paying'
            : r.hold_reason !== null
              ? 'held'
              : 'due';
      // A cancel took the nonce back while it was void: nothing was paid, so it is owed afresh (a new nonce).
      const cancelled = state === 'due' && r.refund_nonce !== null;
      const result = await this.database.db
        .updateTable('refunds')
        .set((eb) => ({
          state,
          voided_at: null,
          void_reason: null,
          events: eb('events', '+', 1),
          ...(cancelled ? { refund_nonce: null, refund_to: null, refund_variants: null, refund_block: null } : {}),
        }))
        .where('id', '=', r.id)
        .where('state', '=', 'void')
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) === 1) restored.push(r.id);
    }
    return restored;
  }

  /** How many rows each state (and hold reason) has, and when the oldest `due` row was recorded: the operator's gauges. */
  async summary(): Promise<{ counts: Array<{ state: RefundState; holdReason?: HoldReason; rows: number }>; oldestDue?: string }> {
    const rows = await this.database.db
      .selectFrom('refunds')
      .select(['state', 'hold_reason', (eb) => eb.fn.countAll<number | string>().as('n')])
      .groupBy(['state', 'hold_reason'])
      .execute();
    const oldest = await this.database.db
      .selectFrom('refunds')
      .select((eb) => eb.fn.min('created_at').as('first'))
      .where('state', '=', 'due')
      .executeTakeFirst();
    return {
      counts: rows.map((r) => ({
        state: r.state as RefundState,
        ...(r.hold_reason === null ? {} : { holdReason: r.hold_reason as HoldReason }),
        rows: Number(r.n),
      })),
      ...(oldest?.first ? { oldestDue: oldest.first } : {}),
    };
  }

  /** One row, or undefined. */
  async get(id: string): Promise<RefundRow | undefined> {
    return readRefundRow(this.database, id);
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

  /** Approves paying a row held `above-limit`, once (db/refund-settlement.ts approveRefund). */
  approve(
    id: string,
    approvedBy: string,
    now = new Date(),
  ): Promise<{ outcome: 'approved' | 'same' | 'conflict'; row: RefundRow } | { outcome: 'missing' }> {
    return approveRefund(this.database, id, approvedBy, now);
  }

  /** Records that a due refund was paid or waived, once (db/refund-settlement.ts settleRefund). */
  settle(id: string, settlement: Settlement, settledBy: string, now = new Date()): Promise<SettleOutcome> {
    return settleRefund(this.database, id, settlement, settledBy, now);
  }
}
