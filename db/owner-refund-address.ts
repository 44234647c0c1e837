import type { Database } from './database';
import type { HoldReason } from './refund-ledger';

/** The refund address an execution's owner set by a signed command (decision 0098). */
export interface OwnerRefundAddress {
  /** Lowercase. */
  address: string;
  /** The payer (lowercase) of the execution's own deposit, whose transfers it covers. */
  payer?: string;
  /** The own deposit's transaction (lowercase). */
  txHash: string;
  /** The command's timestamp, Unix seconds. */
  at: number;
  /** The command's signature, canonical hex. */
  signature: string;
}

/** What a command made of the stored address: applied, the same command again, or refused. */
export type OwnerRefundOutcome =
  | { outcome: 'applied'; released: number }
  | { outcome: 'same' }
  | { outcome: 'stale'; current: OwnerRefundAddress }
  | { outcome: 'paying' }
  | { outcome: 'missing' };

/** Holds the owner's address lifts: each was about the destination, which the owner has now named. */
const DESTINATION_HOLDS: readonly HoldReason[] = ['no-destination', 'contract-payer', 'refund-address-refused'];

/**
 * The owner's refund address of each deposit address (`deposit_addresses.owner_refund_*`). The
 * refunder reads it with the address's other facts (db/refund-payments.ts) at every signing.
 */
export class OwnerRefundAddresses {
  constructor(private readonly database: Database) {}

  /** The owner's refund address of deposit address `address` on `chain`, if one was set. */
  async of(chain: string, address: string): Promise<OwnerRefundAddress | undefined> {
    const row = await this.database.db
      .selectFrom('deposit_addresses')
      .select(['owner_refund_address', 'owner_refund_payer', 'owner_refund_tx', 'owner_refund_at', 'owner_refund_signature'])
      .where('chain', '=', chain)
      .where('address', '=', address.toLowerCase())
      .executeTakeFirst();
    if (!row || row.owner_refund_address === null) return undefined;
    return {
      address: row.owner_refund_address,
      ...(row.owner_refund_payer === null ? {} : { payer: row.owner_refund_payer }),
      txHash: row.owner_refund_tx!,
      at: Number(row.owner_refund_at),
      signature: row.owner_refund_signature!,
    };
  }

  /**
   * Applies a command in one transaction: refused while a refund of the execution is `paying` (its
   * transaction names the old destination), or when the stored command is as new or newer (`same`
   * for that very command: a retry). Applied, the execution's rows held for want of a destination
   * that the address covers (the own deposit's transaction, the same payer's transfers) are `due` again.
   */
  async set(chain: string, address: string, workflowId: string, command: OwnerRefundAddress): Promise<OwnerRefundOutcome> {
    return this.database.db.transaction().execute(async (trx) => {
      // SQLite runs one writing transaction at a time; PostgreSQL locks the address's row.
      const select = trx
        .selectFrom('deposit_addresses')
        .select(['owner_refund_address', 'owner_refund_payer', 'owner_refund_tx', 'owner_refund_at', 'owner_refund_signature'])
        .where('chain', '=', chain)
        .where('address', '=', address.toLowerCase());
      const current = await (this.database.kind === 'postgres' ? select.forUpdate() : select).executeTakeFirst();
      if (!current) return { outcome: 'missing' };
      if (current.owner_refund_signature === command.signature) return { outcome: 'same' };
      if (current.owner_refund_at !== null && Number(current.owner_refund_at) >= command.at)
        return {
          outcome: 'stale',
          current: {
            address: current.owner_refund_address!,
            txHash: current.owner_refund_tx!,
            at: Number(current.owner_refund_at),
            signature: current.owner_refund_signature!,
            ...(current.owner_refund_payer === null ? {} : { payer: current.owner_refund_payer }),
          },
        };
      const paying = await trx
        .selectFrom('refunds')
        .select('id')
        .where('workflow_id', '=', workflowId)
        .where('state', '=', 'paying')
        .executeTakeFirst();
      if (paying) return { outcome: 'paying' };
      await trx
        .updateTable('deposit_addresses')
        .set({
          owner_refund_address: command.address.toLowerCase(),
          owner_refund_payer: command.payer?.toLowerCase() ?? null,
          owner_refund_tx: command.txHash.toLowerCase(),
          owner_refund_at: command.at,
          owner_refund_signature: command.signature,
        })
        .where('chain', '=', chain)
        .where('address', '=', address.toLowerCase())
        .execute();
      const released = await trx
        .updateTable('refunds')
        .set({ state: 'due', hold_reason: null })
        .where('workflow_id', '=', workflowId)
        .where('state', '=', 'held')
        .where('hold_reason', 'in', [...DESTINATION_HOLDS])
        .where((eb) =>
          eb.or([
            eb('tx_hash', '=', command.txHash.toLowerCase()),
            ...(command.payer === undefined ? [] : [eb('sender', '=', command.payer.toLowerCase())]),
          ]),
        )
        .executeTakeFirst();
      return { outcome: 'applied', released: Number(released.numUpdatedRows) };
    });
  }
}
