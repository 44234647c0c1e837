import { randomUUID } from 'node:crypto';
import type { Selectable } from 'kysely';
import type { RefundVariant } from '../contracts/refunds';
import type { Database } from './database';
import type { GasTopupsTable } from './tables';

/** One signed top-up transaction at a gas account's nonce (a native transfer: no kind, no call data). */
export type TopUpVariant = Omit<RefundVariant, 'kind' | 'data'>;

/** What a gas account sent, or is sending, to a deposit address to pay one token refund's fee. */
export interface TopUp {
  id: string;
  chain: string;
  /** The gas account (lowercase). */
  account: string;
  nonce: number;
  refundId: string;
  /** The deposit address (lowercase). */
  to: string;
  /** Wei. */
  value: string;
  variants: TopUpVariant[];
  /** `sending` until one variant is mined deep enough (`mined`) or a transaction it did not sign took its nonce (`lost`). */
  state: 'sending' | 'mined' | 'lost';
  block?: number;
  txHash?: string;
  fee?: string;
  createdAt: string;
  /** The head when its nonce was first seen used with none of its variants mined (looked at again before it is `lost`). */
  nonceGoneSeenBlock?: number;
}

/** A top-up about to be written before its first broadcast. */
export interface NewTopUp {
  chain: string;
  account: string;
  nonce: number;
  refundId: string;
  to: string;
  value: bigint;
  variant: TopUpVariant;
}

/**
 * The gas accounts' transactions (docs/decisions/0085, 0088): each chain's gas account sends a
 * few top-ups at once, for different refunds, at consecutive nonces above the count the read model
 * keeps, with every signed variant written before it is broadcast. A top-up is a row here, never a
 * deposit nor a refunds ledger row. The unique index on (chain, account, nonce) is what serialises
 * every worker's top-ups on one account: two that read the same nonce can both try, one insert wins.
 */
export class GasAccountLedger {
  constructor(private readonly database: Database) {}

  /**
   * Registers `address` as `chain`'s gas account, counting `noncesMined` transactions before it
   * (the chain's nonce when the service first used it); one registered before keeps its count.
   * Answers the count the read model holds. Registered, its transfers are the service's own
   * (db/deposit-addresses.ts servicePayers): never a deposit.
   */
  async register(chain: string, address: string, noncesMined: number, now = new Date()): Promise<number> {
    const lower = address.toLowerCase();
    await this.database.db
      .insertInto('gas_accounts')
      .values({ chain, address: lower, nonces_mined: noncesMined, created_at: now.toISOString() })
      .onConflict((oc) => oc.columns(['chain', 'address']).doNothing())
      .execute();
    const row = await this.database.db
      .selectFrom('gas_accounts')
      .select('nonces_mined')
      .where('chain', '=', chain)
      .where('address', '=', lower)
      .executeTakeFirstOrThrow();
    return Number(row.nonces_mined);
  }

  /** Every registered gas account, with its count (the balance metric reads them). */
  async accounts(): Promise<Array<{ chain: string; address: string; noncesMined: number }>> {
    const rows = await this.database.db.selectFrom('gas_accounts').selectAll().orderBy('chain').orderBy('address').execute();
    return rows.map((r) => ({ chain: r.chain, address: r.address, noncesMined: Number(r.nonces_mined) }));
  }

  /**
   * The count of `address` to `found` (the chain's nonce), from `expected`, while none of its
   * top-ups is being sent: a transaction somebody else sent from the gas account (by hand) took
   * nonces the service never signed. False when the count or an in-flight top-up changed.
   */
  async resync(chain: string, address: string, expected: number, found: number): Promise<boolean> {
    const lower = address.toLowerCase();
    const result = await this.database.db
      .updateTable('gas_accounts')
      .set({ nonces_mined: found })
      .where('chain', '=', chain)
      .where('address', '=', lower)
      .where('nonces_mined', '=', expected)
      .where((eb) =>
        eb.not(
          eb.exists(
            eb
              .selectFrom('gas_topups as t')
              .select('t.id')
              .where('t.chain', '=', chain)
              .where('t.account', '=', lower)
              .where('t.state', '=', 'sending'),
          ),
        ),
      )
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  /** The gas account's top-ups being sent, lowest nonce first (at most the `maxInFlight` start allowed). */
  async sending(chain: string, account: string): Promise<TopUp[]> {
    const rows = await this.database.db
      .selectFrom('gas_topups')
      .selectAll()
      .where('chain', '=', chain)
      .where('account', '=', account.toLowerCase())
      .where('state', '=', 'sending')
      .orderBy('nonce')
      .execute();
    return rows.map(toTopUp);
  }

  /** Wei the mined top-ups for refund `refundId` put on its deposit address. */
  async toppedUp(refundId: string): Promise<bigint> {
    const rows = await this.database.db
      .selectFrom('gas_topups')
      .select('value')
      .where('refund_id', '=', refundId)
      .where('state', '=', 'mined')
      .execute();
    return rows.reduce((sum, r) => sum + BigInt(r.value), 0n);
  }

  /** Every top-up for refund `refundId`, oldest first. */
  async ofRefund(refundId: string): Promise<TopUp[]> {
    const rows = await this.database.db.selectFrom('gas_topups').selectAll().where('refund_id', '=', refundId).orderBy('nonce').execute();
    return rows.map(toTopUp);
  }

  /**
   * Writes a top-up with its first signed variant, before it is broadcast: only at the gas
   * account's next nonce (its count plus the top-ups being sent, which hold the nonces right above
   * the count), while fewer than `maxInFlight` are being sent and none of them is for the same
   * refund. False when any of that changed or another worker took the nonce first (nothing
   * written: the signature is thrown away).
   */
  async start(topUp: NewTopUp, maxInFlight: number, now = new Date()): Promise<boolean> {
    const account = topUp.account.toLowerCase();
    try {
      return await this.database.db.transaction().execute(async (trx) => {
        const counted = await trx
          .selectFrom('gas_accounts')
          .select('nonces_mined')
          .where('chain', '=', topUp.chain)
          .where('address', '=', account)
          .executeTakeFirst();
        if (counted === undefined) return false;
        const sending = await trx
          .selectFrom('gas_topups')
          .select('refund_id')
          .where('chain', '=', topUp.chain)
          .where('account', '=', account)
          .where('state', '=', 'sending')
          .execute();
        if (sending.length >= maxInFlight || sending.some((s) => s.refund_id === topUp.refundId)) return false;
        if (Number(counted.nonces_mined) + sending.length !== topUp.nonce) return false;
        await trx
          .insertInto('gas_topups')
          .values({
            id: randomUUID(),
            chain: topUp.chain,
            account,
            nonce: topUp.nonce,
            refund_id: topUp.refundId,
            to_address: topUp.to.toLowerCase(),
            value: topUp.value.toString(),
            variants: JSON.stringify([topUp.variant]),
            state: 'sending',
            block: null,
            tx_hash: null,
            fee: null,
            created_at: now.toISOString(),
          })
          .execute();
        return true;
      });
    } catch (err) {
      // The unique (chain, account, nonce): another worker's insert at the same nonce won.
      if (/unique|duplicate/i.test((err as Error).message)) return false;
      throw err;
    }
  }

  /** Replaces a sending top-up's variants (one appended, or one marked broadcast) when they are still `expected`; false otherwise. */
  async updateVariants(id: string, expected: readonly TopUpVariant[], variants: readonly TopUpVariant[]): Promise<boolean> {
    const result = await this.database.db
      .updateTable('gas_topups')
      .set({ variants: JSON.stringify(variants) })
      .where('id', '=', id)
      .where('state', '=', 'sending')
      .where('variants', '=', JSON.stringify(expected))
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  /**
   * Records a sending top-up mined by its variant `hash` (deep enough), with the gas account's
   * count in the same transaction; false when it was recorded before.
   */
  async recordMined(topUp: TopUp, mined: { hash: string; block: number; fee: string }): Promise<boolean> {
    if (!topUp.variants.some((v) => v.hash === mined.hash))
      throw new Error(`transaction ${mined.hash} is not a variant of top-up ${topUp.id}`);
    return this.database.db.transaction().execute(async (trx) => {
      const updated = await trx
        .updateTable('gas_topups')
        .set({ state: 'mined', tx_hash: mined.hash.toLowerCase(), block: mined.block, fee: mined.fee })
        .where('id', '=', topUp.id)
        .where('state', '=', 'sending')
        .executeTakeFirst();
      if (Number(updated.numUpdatedRows) !== 1) return false;
      await trx
        .updateTable('gas_accounts')
        .set((eb) => ({ nonces_mined: eb('nonces_mined', '+', 1) }))
        .where('chain', '=', topUp.chain)
        .where('address', '=', topUp.account)
        .execute();
      return true;
    });
  }

  /** Keeps `head` as the block at which top-up `id`'s nonce was seen used with none of its variants mined. */
  async rememberNonceGone(id: string, head: number): Promise<void> {
    await this.database.db.updateTable('gas_topups').set({ nonce_gone_seen_block: head }).where('id', '=', id).execute();
  }

  /**
   * Records that a transaction none of its variants took a sending top-up's nonce (the gas account
   * used by hand): `lost`. The count is left to `resync`, which follows the chain once nothing is
   * being sent; the refund is topped up again by a later top-up.
   */
  async recordLost(topUp: TopUp): Promise<boolean> {
    const result = await this.database.db
      .updateTable('gas_topups')
      .set({ state: 'lost' })
      .where('id', '=', topUp.id)
      .where('state', '=', 'sending')
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }
}

function toTopUp(r: Selectable<GasTopupsTable>): TopUp {
  return {
    id: r.id,
    chain: r.chain,
    account: r.account,
    nonce: Number(r.nonce),
    refundId: r.refund_id,
    to: r.to_address,
    value: r.value,
    variants: JSON.parse(r.variants) as TopUpVariant[],
    state: r.state as TopUp['state'],
    ...(r.block === null ? {} : { block: Number(r.block) }),
    ...(r.tx_hash === null ? {} : { txHash: r.tx_hash }),
    ...(r.fee === null ? {} : { fee: r.fee }),
    createdAt: r.created_at,
    ...(r.nonce_gone_seen_block === null ? {} : { nonceGoneSeenBlock: Number(r.nonce_gone_seen_block) }),
  };
}
