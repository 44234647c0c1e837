import { sql, type ExpressionBuilder, type Kysely } from 'kysely';
import type { HoldReason, RefundRow, Settlement } from '../contracts/refunds';
import { TX_HASH } from '../domain/deposit-proof';
import type { Database } from './database';
import { readRefundRow } from './refund-rows';
import type { ReadModelTables as Tables } from './tables';

// A person's decisions on a refunds ledger row (through the API or the CLI): approving a row held
// above its limit, and settling a row as refunded (by a transaction) or waived.

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
  /**
   * A waiver of a row whose refund nonce a transaction the ledger did not sign took (held
   * `nonce-mismatch` with a `refundNonce`): the money may have left; settled only as refunded, with
   * the transaction that paid it.
   */
  | { outcome: 'nonce-taken'; row: RefundRow }
  | { outcome: 'missing' };

/** A refund transaction's hash as a settlement carries it: an EVM transaction hash (the only chains there are). */
export const isRefundTxHash = (txHash: string): boolean => TX_HASH.test(txHash);

/**
 * Approves paying a row held `above-limit`: back to `due`, its approval (the token id, when)
 * recorded, so that the refunder pays it whatever the limit. Once: `approved` when this call
 * approved it; `same` when it was approved before (by anyone); `conflict` when it is not held
 * above the limit (and was never approved); `missing` when there is no such row.
 */
export async function approveRefund(
  database: Database,
  id: string,
  approvedBy: string,
  now = new Date(),
): Promise<{ outcome: 'approved' | 'same' | 'conflict'; row: RefundRow } | { outcome: 'missing' }> {
  const result = await database.db
    .updateTable('refunds')
    .set({ state: 'due', hold_reason: null, approved_by: approvedBy, approved_at: now.toISOString() })
    .where('id', '=', id)
    .where('state', '=', 'held')
    .where('hold_reason', '=', 'above-limit' satisfies HoldReason)
    .where('approved_by', 'is', null)
    .executeTakeFirst();
  const row = await readRefundRow(database, id);
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
export async function settleRefund(
  database: Database,
  id: string,
  settlement: Settlement,
  settledBy: string,
  now = new Date(),
): Promise<SettleOutcome> {
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
      // A nonce signed and taken by another transaction: waived, nobody would know where the money went.
      .$if(settlement.state === 'waived', (q) =>
        q.where((eb) =>
          eb.or([
            eb('refund_nonce', 'is', null),
            eb('hold_reason', 'is', null),
            eb('hold_reason', '<>', 'nonce-mismatch' satisfies HoldReason),
          ]),
        ),
      )
      .$if(txHash !== undefined, (q) => q.where((eb) => eb.not(eb.exists(otherGroupSettledBy(eb, txHash!)))))
      .executeTakeFirst();
  const result =
    txHash !== undefined && database.kind === 'postgres'
      ? await database.db.transaction().execute(async (trx) => {
          await sql`select pg_advisory_xact_lock(hashtext(${'refund-tx:' + txHash}))`.execute(trx);
          return update(trx);
        })
      : await update(database.db);
  const row = await readRefundRow(database, id);
  if (!row) return { outcome: 'missing' };
  if (Number(result.numUpdatedRows) === 1) return { outcome: 'settled', row };
  if (row.refundNonce !== undefined && row.refundBlock === undefined) return { outcome: 'paying', row };
  if (settlement.state === 'waived' && row.state === 'held' && row.holdReason === 'nonce-mismatch' && row.refundNonce !== undefined)
    return { outcome: 'nonce-taken', row };
  if ((row.state === 'due' || row.state === 'held') && txHash !== undefined) {
    const other = await database.db
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
