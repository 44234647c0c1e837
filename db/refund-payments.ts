import { sql, type Transaction } from 'kysely';
import type { KeyDerivation } from '../domain/deposit-key';
import type { Database } from './database';
import type { ReadModelTables } from './tables';
import { DepositAddressStore } from './deposit-addresses';
import type { HoldReason, RefundRow, RefundVariant } from './refund-ledger';
import { toRow } from './refund-rows';
import { moneyLeft, sharesOf } from '../domain/refund-batch';

/** A deposit address as the refunder sees it: whose it is, where its refunds go, how many of its nonces are mined. */
export interface RefundSource {
  chain: string;
  /** Lowercase. */
  address: string;
  workflowId: string;
  /** prepare's deposit.refundAddress (lowercase), if it named one. */
  refundAddress?: string;
  /** The refund address the execution's owner set (db/owner-refund-address.ts), with what it covers. */
  owner?: { address: string; payer?: string; txHash: string };
  /** Transactions the refunder saw mined from the address: the nonce its next refund must find. */
  noncesMined: number;
  /** How its key derives from the seed. */
  derivation: KeyDerivation;
}

/**
 * A row the refunder works on, with its deposit address. Rows of one address, asset and destination
 * are paid by one transaction (docs/decisions/0091): the oldest is the job's `row`, the others its
 * `members`, and every one of them carries the transaction's nonce and variants, so that each row
 * alone says a transaction is out for it (a person settling it, a reorganisation voiding it).
 */
export interface RefundJob {
  row: RefundRow;
  /** The other rows the same nonce pays (none when the row is paid alone, or not signed yet). */
  members: RefundRow[];
  source: RefundSource;
  /** The head when the row's nonce was first seen used with none of its variants mined (the refunder looks again before it decides). */
  nonceGoneSeenBlock?: number;
}

/** What mined a row's nonce: one of its variants, with its receipt's status and block. */
export interface MinedNonce {
  hash: string;
  block: number;
  succeeded: boolean;
  /** What it cost (gas used × effective gas price, wei): kept on the row when it paid nobody (a cancel, status 0). */
  fee?: string;
  /** A token refund's: wei its gas top-ups left on the deposit address (its fee was theirs, not the row's). */
  gasLeft?: string;
  /** A token refund that succeeded without the token's `Transfer` of the amount to the destination: held, never re-sent. */
  noTransferLog?: boolean;
}

/**
 * The refunds ledger as the service's refunder uses it (docs/decisions/0081): which deposit
 * addresses have rows to pay, the next row of one address, and the conditional updates that
 * make a refund happen once: `due` → `paying` with the nonce and the first signed variant, more
 * variants at the same nonce, the mined outcome (with the address's count of mined nonces, in one
 * transaction), and holds. Every update names the state it expects, so a second worker, a
 * terminated workflow or an operator racing it changes nothing.
 */
/** The ids of `job`'s rows: its row, then its members. */
export const rowIds = (job: RefundJob): string[] => [job.row.id, ...job.members.map((m) => m.id)];

/** Thrown inside a database transaction to roll it back when an update of several rows did not reach each of them. */
class NotAllRows extends Error {}

/**
 * Runs `change` in one database transaction, all or none: true once it is written; false, with
 * nothing written, when `change` threw NotAllRows (an update that did not reach every row it must).
 */
function allOrNone(database: Database, change: (trx: Transaction<ReadModelTables>) => Promise<void>): Promise<boolean> {
  return database.db
    .transaction()
    .execute(change)
    .then(
      () => true,
      (err: unknown) => {
        if (err instanceof NotAllRows) return false;
        throw err;
      },
    );
}

export class RefundPayments {
  constructor(private readonly database: Database) {}

  /**
   * Deposit addresses on `chain` with a row to work on (due, unless `signing` is false, or a
   * transaction out whose nonce is not mined: `paying`, voided while paying, or held at its fee
   * cap), at most `limit`: those handed out longest ago first (never handed out before any), then
   * the oldest row first. Marks the addresses answered as handed out at `now`, so that addresses
   * whose refunds wait (not deep enough yet, a destination looked at again, a node that fails)
   * take turns with newer ones instead of filling every sweep: with N addresses to work on, each
   * is answered at least once in every ⌈N / limit⌉ sweeps.
   */
  async addressesToPay(chain: string, limit: number, signing = true, now = new Date()): Promise<string[]> {
    const rows = await this.database.db
      .selectFrom('refunds as r')
      .innerJoin('deposit_addresses as d', (j) => j.onRef('d.workflow_id', '=', 'r.workflow_id').onRef('d.chain', '=', 'r.chain'))
      .select(['d.address', (eb) => eb.fn.min('r.created_at').as('first')])
      .where('r.chain', '=', chain)
      .where((eb) =>
        eb.or([
          ...(signing ? [eb('r.state', '=', 'due')] : []),
          eb.and([eb('r.refund_nonce', 'is not', null), eb('r.refund_block', 'is', null)]),
        ]),
      )
      .groupBy(['d.address', 'd.refund_swept_at'])
      // '' sorts before every ISO time on both engines: never handed out comes first.
      .orderBy((eb) => eb.fn.coalesce('d.refund_swept_at', sql<string>`''`))
      .orderBy('first')
      .limit(limit)
      .execute();
    const addresses = rows.map((r) => r.address);
    if (addresses.length > 0)
      await this.database.db
        .updateTable('deposit_addresses')
        .set({ refund_swept_at: now.toISOString() })
        .where('chain', '=', chain)
        .where('address', 'in', addresses)
        .execute();
    return addresses;
  }

  /**
   * Holds `due` rows the refunder can never pay by itself: no chain, no amount, or no deposit
   * address (an HTTP report for an execution without one). Answers how many.
   */
  async holdUnpayable(): Promise<number> {
    const result = await this.database.db
      .updateTable('refunds')
      .set({ state: 'held', hold_reason: 'off-chain' satisfies HoldReason })
      .where('state', '=', 'due')
      .where((eb) =>
        eb.or([
          eb('chain', 'is', null),
          eb('amount', 'is', null),
          eb.not(
            eb.exists(
              eb
                .selectFrom('deposit_addresses as d')
                .select(sql<number>`1`.as('one'))
                .whereRef('d.workflow_id', '=', 'refunds.workflow_id')
                .whereRef('d.chain', '=', 'refunds.chain'),
            ),
          ),
        ]),
      )
      .executeTakeFirst();
    return Number(result.numUpdatedRows);
  }

  /** The deposit address `address` on `chain`, or undefined. */
  async source(chain: string, address: string): Promise<RefundSource | undefined> {
    const d = await this.database.db
      .selectFrom('deposit_addresses')
      .select([
        'chain',
        'address',
        'workflow_id',
        'refund_address',
        'refund_nonces_mined',
        'owner_refund_address',
        'owner_refund_payer',
        'owner_refund_tx',
        'key_derivation',
      ])
      .where('chain', '=', chain)
      .where('address', '=', address.toLowerCase())
      .executeTakeFirst();
    return (
      d && {
        chain: d.chain,
        address: d.address,
        workflowId: d.workflow_id,
        ...(d.refund_address === null ? {} : { refundAddress: d.refund_address }),
        ...(d.owner_refund_address === null
          ? {}
          : {
              owner: {
                address: d.owner_refund_address,
                txHash: d.owner_refund_tx!,
                ...(d.owner_refund_payer === null ? {} : { payer: d.owner_refund_payer }),
              },
            }),
        noncesMined: Number(d.refund_nonces_mined),
        derivation: d.key_derivation as KeyDerivation,
      }
    );
  }

  /**
   * The row of `address` to work on next: the one whose transaction is out (its nonce not mined:
   * paying, voided while paying, or held at its fee cap; there is at most one nonce out, and its
   * oldest row leads, the others are its members), else its oldest `due` row; undefined when none
   * is left.
   */
  async next(chain: string, address: string): Promise<RefundJob | undefined> {
    const source = await this.source(chain, address);
    if (!source) return undefined;
    const base = this.database.db
      .selectFrom('refunds')
      .selectAll()
      .where('workflow_id', '=', source.workflowId)
      .where('chain', '=', chain)
      .orderBy('created_at')
      .orderBy('id');
    const inFlight = await base.where('refund_nonce', 'is not', null).where('refund_block', 'is', null).execute();
    const row = inFlight[0] ?? (await base.where('state', '=', 'due').executeTakeFirst());
    return (
      row && {
        row: toRow(row),
        members: inFlight.slice(1).map(toRow),
        source,
        ...(row.nonce_gone_seen_block === null ? {} : { nonceGoneSeenBlock: Number(row.nonce_gone_seen_block) }),
      }
    );
  }

  /** Every `due` row of `address`'s execution on `chain` to `held` with `reason` (automatic refunds from it stop). Answers how many. */
  async holdAddress(source: RefundSource, reason: HoldReason): Promise<number> {
    const result = await this.database.db
      .updateTable('refunds')
      .set({ state: 'held', hold_reason: reason })
      .where('workflow_id', '=', source.workflowId)
      .where('chain', '=', source.chain)
      .where('state', '=', 'due')
      .executeTakeFirst();
    return Number(result.numUpdatedRows);
  }

  /** A `due` row to `held` with `reason`; false when it was not due any more. */
  async hold(id: string, reason: HoldReason): Promise<boolean> {
    const result = await this.database.db
      .updateTable('refunds')
      .set({ state: 'held', hold_reason: reason })
      .where('id', '=', id)
      .where('state', '=', 'due')
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  /**
   * The address's other `due` rows (beside `job`'s row), oldest first, at most `limit`: those a
   * refund transaction may pay together with it.
   */
  async dueAlongside(job: RefundJob, limit: number): Promise<RefundRow[]> {
    const rows = await this.database.db
      .selectFrom('refunds')
      .selectAll()
      .where('workflow_id', '=', job.source.workflowId)
      .where('chain', '=', job.source.chain)
      .where('state', '=', 'due')
      .where('id', '<>', job.row.id)
      .orderBy('created_at')
      .orderBy('id')
      .limit(limit)
      .execute();
    return rows.map(toRow);
  }

  /**
   * `due` → `paying` with the nonce, the destination and the first signed variant, before anything
   * is broadcast, for `job`'s row and the `members` its transaction pays too, all or none (one
   * database transaction): only while each is `due`, the address's mined nonces are still `nonce`
   * (nothing was mined from it since the refunder read its nonce) and no other row of the address
   * has a transaction out. False when any of that changed (nothing written: the signature is thrown
   * away).
   */
  async startPaying(
    job: RefundJob,
    nonce: number,
    to: string,
    variant: RefundVariant,
    members: readonly RefundRow[] = [],
  ): Promise<boolean> {
    const { row, source } = job;
    const ids = [row.id, ...members.map((m) => m.id)];
    return allOrNone(this.database, async (trx) => {
      const result = await trx
        .updateTable('refunds')
        .set({
          state: 'paying',
          refund_nonce: nonce,
          refund_to: to.toLowerCase(),
          refund_variants: JSON.stringify([variant]),
        })
        .where('id', 'in', ids)
        .where('workflow_id', '=', source.workflowId)
        .where('chain', '=', source.chain)
        .where('state', '=', 'due')
        .where('refund_nonce', 'is', null)
        .where((eb) =>
          eb.exists(
            eb
              .selectFrom('deposit_addresses as d')
              .select(sql<number>`1`.as('one'))
              .where('d.chain', '=', source.chain)
              .where('d.address', '=', source.address)
              .where('d.refund_nonces_mined', '=', nonce),
          ),
        )
        .where((eb) =>
          eb.not(
            eb.exists(
              eb
                .selectFrom('refunds as o')
                .select(sql<number>`1`.as('one'))
                .where('o.workflow_id', '=', source.workflowId)
                .where('o.chain', '=', source.chain)
                .where('o.refund_nonce', 'is not', null)
                .where('o.refund_block', 'is', null)
                .where('o.id', 'not in', ids),
            ),
          ),
        )
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) !== ids.length) throw new NotAllRows();
    });
  }

  /**
   * Replaces the list of variants of rows `ids` (a job's row and its members: they share it; a new
   * one appended, or one marked broadcast) when it is still `expected` (the list this caller read)
   * on each and the nonce is not mined, all or none; false otherwise.
   */
  async updateVariants(ids: readonly string[], expected: readonly RefundVariant[], variants: readonly RefundVariant[]): Promise<boolean> {
    return allOrNone(this.database, async (trx) => {
      const result = await trx
        .updateTable('refunds')
        .set({ refund_variants: JSON.stringify(variants) })
        .where('id', 'in', [...ids])
        .where('refund_variants', '=', JSON.stringify(expected))
        .where('refund_block', 'is', null)
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) !== ids.length) throw new NotAllRows();
      // The rows of one nonce keep one list: a caller that named only some of them writes nothing.
      const first = await trx
        .selectFrom('refunds')
        .select(['workflow_id', 'chain', 'refund_nonce'])
        .where('id', '=', ids[0])
        .executeTakeFirstOrThrow();
      const left = await trx
        .selectFrom('refunds')
        .select('id')
        .where('workflow_id', '=', first.workflow_id)
        .where('chain', '=', first.chain)
        .where('refund_nonce', '=', first.refund_nonce)
        .where('refund_block', 'is', null)
        .where('id', 'not in', [...ids])
        .executeTakeFirst();
      if (left) throw new NotAllRows();
    });
  }

  /**
   * Records that the nonce of `job`'s rows (its row and its members) was mined by `mined` (one of
   * their variants), once, with the address's count of mined nonces in the same transaction:
   * - a refund variant that succeeded: every row `refunded` (refundTxHash, block; no hold reason
   *   left), whatever state it had (a refund mined for a row voided meanwhile is still money paid,
   *   and says so), each with its share of what the transaction paid as its refundValue (a token
   *   row its amount; native rows the value shared in proportion to their money on the address);
   * - a refund variant that failed (status 0): `held` as `reverted` (the nonce is used);
   * - a token refund that succeeded without its `Transfer` log: `held` as `no-transfer-log`;
   * - a cancel: a `void` row stays void; a row restored meanwhile goes back to `due`, its nonce
   *   and hold reason forgotten (a new one is signed).
   * What a transaction that paid nobody cost comes out of the leading row's own amount (a later
   * refund pays that much less). Answers the leading row after, or undefined when the nonce was
   * recorded mined before.
   */
  async recordMined(job: RefundJob, mined: MinedNonce, now = new Date()): Promise<RefundRow | undefined> {
    const { row, source } = job;
    const variant = row.refundVariants?.find((v) => v.hash === mined.hash);
    if (!variant) throw new Error(`transaction ${mined.hash} is not a variant of refund ${row.id}`);
    return this.database.db.transaction().execute(async (trx) => {
      const lead = await trx.selectFrom('refunds').selectAll().where('id', '=', row.id).executeTakeFirst();
      if (!lead || lead.refund_block !== null || lead.refund_nonce === null) return undefined;
      const group = await trx
        .selectFrom('refunds')
        .selectAll()
        .where('workflow_id', '=', source.workflowId)
        .where('chain', '=', source.chain)
        .where('refund_nonce', '=', lead.refund_nonce)
        .where('refund_block', 'is', null)
        .where('id', '<>', lead.id)
        .orderBy('created_at')
        .orderBy('id')
        .execute();
      const rows = [lead, ...group];
      const paid = variant.kind === 'refund' && mined.succeeded && mined.noTransferLog !== true;
      const token = variant.data !== undefined;
      const shares = sharesOf(
        BigInt(variant.value),
        rows.map((r) => moneyLeft({ amount: r.amount ?? '0', ...(r.fees_spent === null ? {} : { feesSpent: r.fees_spent }) })),
      );
      let updatedLead = false;
      for (const [i, current] of rows.entries()) {
        const first = i === 0;
        const spent = {
          ...(paid || mined.fee === undefined || !first
            ? {}
            : { fees_spent: (BigInt(current.fees_spent ?? '0') + BigInt(mined.fee)).toString() }),
          ...(mined.gasLeft === undefined || !first ? {} : { gas_left: mined.gasLeft }),
        };
        const set =
          variant.kind === 'refund'
            ? paid
              ? {
                  state: 'refunded',
                  refund_tx_hash: mined.hash.toLowerCase(),
                  refund_block: mined.block,
                  // A token refund moves each row's whole amount by its call; a native one shares its value.
                  refund_value: token ? current.amount : shares[i].toString(),
                  ...spent,
                  settled_at: now.toISOString(),
                  settled_by: 'refunder',
                  // Held at its fee cap before it mined: paid now, held no more.
                  hold_reason: null,
                }
              : {
                  state: current.state === 'void' ? 'void' : 'held',
                  hold_reason: (mined.succeeded ? 'no-transfer-log' : 'reverted') satisfies HoldReason,
                  refund_block: mined.block,
                  ...spent,
                }
            : current.state === 'void'
              ? { refund_block: mined.block, ...spent }
              : { state: 'due', refund_nonce: null, refund_to: null, refund_variants: null, hold_reason: null, ...spent };
        // Conditional on what was read: a second caller recording the same nonce at once (PostgreSQL
        // reads without locking) updates nothing here, and counts nothing.
        const updated = await trx
          .updateTable('refunds')
          .set(set)
          .where('id', '=', current.id)
          .where('refund_block', 'is', null)
          .where('refund_nonce', '=', lead.refund_nonce)
          .executeTakeFirst();
        if (first && Number(updated.numUpdatedRows) !== 1) return undefined;
        updatedLead ||= first;
      }
      if (!updatedLead) return undefined;
      await trx
        .updateTable('deposit_addresses')
        .set((eb) => ({ refund_nonces_mined: eb('refund_nonces_mined', '+', 1) }))
        .where('chain', '=', source.chain)
        .where('address', '=', source.address)
        .execute();
      const after = await trx.selectFrom('refunds').selectAll().where('id', '=', row.id).executeTakeFirstOrThrow();
      return toRow(after);
    });
  }

  /**
   * Records that the nonce of `job`'s rows was mined by a transaction that is none of their variants
   * (a spend by hand from the address): each is `held` as `nonce-mismatch` (a `void` row stays void) and
   * its nonce is no longer watched (refundBlock: the head when it was seen). The address's count of
   * mined nonces is left behind the chain on purpose: no refund is signed from it again until a
   * person looks.
   */
  async recordNonceUsedElsewhere(job: RefundJob, head: number): Promise<boolean> {
    const result = await this.database.db
      .updateTable('refunds')
      .set((eb) => ({
        state: eb.case().when('state', '=', 'void').then('void').else('held').end(),
        hold_reason: 'nonce-mismatch' satisfies HoldReason,
        refund_block: head,
      }))
      .where('id', 'in', rowIds(job))
      .where('refund_nonce', 'is not', null)
      .where('refund_block', 'is', null)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /** Keeps `head` as the block at which row `id`'s nonce was seen used with none of its variants mined. */
  async rememberNonceGone(id: string, head: number): Promise<void> {
    await this.database.db.updateTable('refunds').set({ nonce_gone_seen_block: head }).where('id', '=', id).execute();
  }

  /**
   * Rows `ids` (a job's row and its members) whose transaction is out to `held` (its fees reached their cap unmined): how
   * many. Their variants stay
   * and are still watched: whichever mines later is recorded, and nobody settles the row by hand
   * until then (RefundLedger.settle answers `paying`).
   */
  async holdInFlight(ids: readonly string[], reason: HoldReason): Promise<number> {
    const result = await this.database.db
      .updateTable('refunds')
      .set({ state: 'held', hold_reason: reason })
      .where('id', 'in', [...ids])
      .where('state', '=', 'paying')
      .where('refund_block', 'is', null)
      .executeTakeFirst();
    return Number(result.numUpdatedRows);
  }

  /** Whether `address` (any case) is a deposit address on any chain: never a refund's destination. */
  isDepositAddress(address: string): Promise<boolean> {
    return new DepositAddressStore(this.database).isDepositAddress(address);
  }

  /** Those of `addresses` (any case) the service pays from on `chain` (deposit addresses, gas accounts), lowercase: a transfer they pay is the service's own. */
  servicePayersAmong(chain: string, addresses: readonly string[]): Promise<Set<string>> {
    return new DepositAddressStore(this.database).servicePayers(chain, addresses);
  }

  /** The rows the refunder paid from `chain` (refunded with a nonce), for reconcile to check on the chain. */
  async paidBy(chain: string): Promise<RefundRow[]> {
    const rows = await this.database.db
      .selectFrom('refunds')
      .selectAll()
      .where('chain', '=', chain)
      .where('refund_nonce', 'is not', null)
      .where('refund_block', 'is not', null)
      .orderBy('created_at')
      .execute();
    return rows.map(toRow);
  }
}
