import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import { sql, type ExpressionBuilder, type Kysely, type Selectable } from 'kysely';
import type { Database } from './database';
import type { ReadModelTables as Tables, RefundsTable } from './tables';
import type { HoldReason, RefundDue, RefundRow, RefundState, RefundVariant, Settlement, VoidReason } from '../contracts/refunds';
import type { LedgerPosition } from './page-token';
import type { Deposit, ExecutionRecord, RefusedDeposit } from '../domain/execution-state';
import type { PayerKind } from '../domain/payer-kind';
import { isBaseUnits } from '../domain/wei';
import { TX_HASH } from '../domain/deposit-proof';

export type { HoldReason, RefundDue, RefundRow, RefundState, RefundVariant, Settlement, VoidReason } from '../contracts/refunds';

/**
 * A settle call's result: `settled` now, or `same` (this very settlement was recorded before:
 * nothing written); `conflict` (settled otherwise before); `tx-used` (the refund transaction
 * already settles `otherId`, a row of another deposit address: nothing written).
 */
export type SettleOutcome =
  | { outcome: 'settled' | 'same'; row: RefundRow }
  | { outcome: 'conflict'; row: RefundRow }
  | { outcome: 'tx-used'; row: RefundRow; otherId: string }
  /** The service's refunder has a transaction out for it: nothing written until its nonce is mined. */
  | { outcome: 'paying'; row: RefundRow }
  | { outcome: 'missing' };

/** A refund transaction's hash as a settlement carries it: an EVM transaction hash (the only chains there are). */
export const isRefundTxHash = (txHash: string): boolean => TX_HASH.test(txHash);

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
    // A record written before amounts were checked at every entry point may hold another spelling
    // (a trusted report's "0099.5"): its row is still owed, its amount unknown, never that text.
    ...(isBaseUnits(d.amount) ? { amount: d.amount } : {}),
    asset: d.asset ?? record.depositTarget?.asset ?? 'native',
    reason,
    reportedBy: 'execution',
  });
  const rows = [...record.refusedDeposits, ...overflow].map((r) => row(r, r.reason));
  if (record.deposit?.refundDue)
    rows.push(row(record.deposit, record.status === 'EXPIRED' ? 'unsigned-by-deadline' : 'cancelled-after-deposit'));
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
        state: due.holdReason === undefined ? 'due' : 'held',
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
   * Approves paying a row held `above-limit`: back to `due`, its approval (the token id, when)
   * recorded, so that the refunder pays it whatever the limit. Once: `approved` when this call
   * approved it; `same` when it was approved before (by anyone); `conflict` when it is not held
   * above the limit (and was never approved); `missing` when there is no such row.
   */
  async approve(
    id: string,
    approvedBy: string,
    now = new Date(),
  ): Promise<{ outcome: 'approved' | 'same' | 'conflict'; row: RefundRow } | { outcome: 'missing' }> {
    const result = await this.database.db
      .updateTable('refunds')
      .set({ state: 'due', hold_reason: null, approved_by: approvedBy, approved_at: now.toISOString() })
      .where('id', '=', id)
      .where('state', '=', 'held')
      .where('hold_reason', '=', 'above-limit' satisfies HoldReason)
      .where('approved_by', 'is', null)
      .executeTakeFirst();
    const row = await this.get(id);
    if (!row) return { outcome: 'missing' };
    if (Number(result.numUpdatedRows) === 1) return { outcome: 'approved', row };
    return { outcome: row.approvedBy !== undefined ? 'same' : 'conflict', row };
  }

  /**
   * Records that a due refund was paid or waived, once: a row still `due` or `held` takes the
   * settlement (one conditional UPDATE, so two operators settling at once cannot both win); a row
   * with a transaction of the service's refunder whose nonce is not mined (`paying`, or held at its
   * fee cap) takes none (`paying`); a row already settled
   * the same way answers `same` (a txHash in any case: it is stored lowercase); settled another
   * way, `conflict`. One refund transaction pays back to one deposit address: a txHash that
   * already settles a row of another one (rows of an execution without a deposit address are their
   * own group) is `tx-used`, checked in the same UPDATE (NOT EXISTS), under a per-hash lock on
   * PostgreSQL so that two such settlements at once cannot both pass.
   * A txHash that is not `0x` + 64 hex digits throws: the API and the CLI refuse it first.
   */
  async settle(id: string, settlement: Settlement, settledBy: string, now = new Date()): Promise<SettleOutcome> {
    if (settlement.state === 'refunded' && !isRefundTxHash(settlement.txHash))
      throw new TypeError(`refund txHash ${JSON.stringify(settlement.txHash.slice(0, 100))} is not 0x + 64 hex digits`);
    const txHash = settlement.state === 'refunded' ? settlement.txHash.toLowerCase() : undefined;
    const update = (db: Kysely<Tables>) =>
      db
        .updateTable('refunds')
        .set({
          state: settlement.state,
          settled_at: now.toISOString(),
          settled_by: settledBy,
          refund_tx_hash: txHash ?? null,
          waived_reason: settlement.state === 'waived' ? settlement.reason : null,
        })
        .where('id', '=', id)
        .where('state', 'in', ['due', 'held'])
        // A nonce signed and not mined: a refund may still be mined.
        .where((eb) => eb.or([eb('refund_nonce', 'is', null), eb('refund_block', 'is not', null)]))
        .$if(txHash !== undefined, (q) => q.where((eb) => eb.not(eb.exists(otherGroupSettledBy(eb, txHash!)))))
        .executeTakeFirst();
    const result =
      txHash !== undefined && this.database.kind === 'postgres'
        ? await this.database.db.transaction().execute(async (trx) => {
            await sql`select pg_advisory_xact_lock(hashtext(${'refund-tx:' + txHash}))`.execute(trx);
            return update(trx);
          })
        : await update(this.database.db);
    const row = await this.get(id);
    if (!row) return { outcome: 'missing' };
    if (Number(result.numUpdatedRows) === 1) return { outcome: 'settled', row };
    if (row.refundNonce !== undefined && row.refundBlock === undefined) return { outcome: 'paying', row };
    if ((row.state === 'due' || row.state === 'held') && txHash !== undefined) {
      const other = await this.database.db
        .selectFrom('refunds')
        .select('id')
        .where((eb) => eb(eb.fn('lower', ['refund_tx_hash']), '=', txHash))
        .where('id', '<>', id)
        .orderBy('id')
        .executeTakeFirst();
      if (other) return { outcome: 'tx-used', row, otherId: other.id };
    }
    const same =
      row.state === settlement.state &&
      (settlement.state === 'refunded'
        ? row.refundTxHash?.toLowerCase() === settlement.txHash.toLowerCase()
        : row.waivedReason === settlement.reason);
    return { outcome: same ? 'same' : 'conflict', row };
  }
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

/**
 * The rows outside the group of the row being updated (`refunds`, the UPDATE's table) that
 * `txHash` settles: a group is a deposit address (deposit_addresses, by workflow_id), or for an
 * execution without one its workflow_id.
 */
function otherGroupSettledBy(eb: ExpressionBuilder<Tables, 'refunds'>, txHash: string) {
  return eb
    .selectFrom('refunds as o')
    .select(sql<number>`1`.as('one'))
    .where((o) => o(o.fn('lower', ['o.refund_tx_hash']), '=', txHash))
    .whereRef('o.workflow_id', '<>', 'refunds.workflow_id')
    .where((o) =>
      o.not(
        o.exists(
          o
            .selectFrom('deposit_addresses as a')
            .innerJoin('deposit_addresses as b', (j) => j.onRef('a.chain', '=', 'b.chain').onRef('a.address', '=', 'b.address'))
            .select(sql<number>`1`.as('one'))
            .whereRef('a.workflow_id', '=', 'o.workflow_id')
            .whereRef('b.workflow_id', '=', 'refunds.workflow_id'),
        ),
      ),
    );
}
