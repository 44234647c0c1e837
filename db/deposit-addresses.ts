import type { KeyDerivation } from '../domain/deposit-key';
import type { Database } from './database';

export interface DepositAddressRow {
  chain: string;
  /** Any case; stored and matched lowercase. */
  address: string;
  workflowId: string;
  minAmount: string;
  /** What the address takes: `native` (the default) or `erc20:<token address>`. */
  asset?: string;
  /** prepare's deposit.refundAddress, any case; stored lowercase (refunds of the address go there). */
  refundAddress?: string;
  /** How its key derives from the seed; unset: `bip32-v1`, how every new address is derived. */
  derivation?: KeyDerivation;
}

/** A deposit address's execution and what completes its deposit. */
export interface DepositAddressOwner {
  workflowId: string;
  minAmount: string;
  /** `native` or `erc20:<lowercase token address>`. */
  asset: string;
}

/**
 * The deposit addresses of the read model's `deposit_addresses` table: the API registers one at
 * prepare (before the workflow starts), the chain watcher's activity looks up the recipients of a
 * round's transfers.
 */
export class DepositAddressStore {
  constructor(private readonly database: Database) {}

  /**
   * Registers an address for an execution; idempotent (the same row again changes nothing, and a
   * row registered before keeps what it was registered with). Answers the refund address the row
   * holds (lowercase; absent when it holds none): the caller compares it with the one it asked
   * for, since a retried prepare never changes where refunds go.
   * Throws when the address is already another execution's: derivation makes that impossible
   * short of a seed mix-up, which must not go unnoticed.
   */
  async register(row: DepositAddressRow, now = new Date()): Promise<{ refundAddress?: string }> {
    const address = row.address.toLowerCase();
    await this.database.db
      .insertInto('deposit_addresses')
      .values({
        chain: row.chain,
        address,
        workflow_id: row.workflowId,
        min_amount: row.minAmount,
        asset: (row.asset ?? 'native').toLowerCase(),
        refund_address: row.refundAddress?.toLowerCase() ?? null,
        key_derivation: row.derivation ?? 'bip32-v1',
        created_at: now.toISOString(),
      })
      .onConflict((oc) => oc.columns(['chain', 'address']).doNothing())
      .execute();
    const stored = await this.database.db
      .selectFrom('deposit_addresses')
      .select(['workflow_id', 'refund_address'])
      .where('chain', '=', row.chain)
      .where('address', '=', address)
      .executeTakeFirst();
    if (stored?.workflow_id !== row.workflowId)
      throw new Error(`deposit address ${address} on ${row.chain} belongs to another execution (${stored?.workflow_id ?? 'none'})`);
    return stored.refund_address === null ? {} : { refundAddress: stored.refund_address };
  }

  /**
   * The address registered for execution `workflowId` on `chain` (lowercase) and how its key
   * derives, or undefined: a prepare retried after an upgrade answers the address it was given.
   */
  async addressOf(chain: string, workflowId: string): Promise<{ address: string; derivation: KeyDerivation } | undefined> {
    const row = await this.database.db
      .selectFrom('deposit_addresses')
      .select(['address', 'key_derivation'])
      .where('chain', '=', chain)
      .where('workflow_id', '=', workflowId)
      .orderBy('created_at')
      .executeTakeFirst();
    return row && { address: row.address, derivation: row.key_derivation as KeyDerivation };
  }

  /** Whether `address` (any case) is a deposit address on any chain: never a refund address. */
  async isDepositAddress(address: string): Promise<boolean> {
    const row = await this.database.db
      .selectFrom('deposit_addresses')
      .select('address')
      .where('address', '=', address.toLowerCase())
      .executeTakeFirst();
    return row !== undefined;
  }

  /**
   * Takes one of an address's `cap` signals for transfers below its minAmount: true (and counted)
   * while fewer than `cap` were taken, false after. A retried round may count one transfer twice.
   */
  async takeDustSignal(chain: string, address: string, cap: number): Promise<boolean> {
    const result = await this.database.db
      .updateTable('deposit_addresses')
      .set((eb) => ({ dust_signalled: eb('dust_signalled', '+', 1) }))
      .where('chain', '=', chain)
      .where('address', '=', address.toLowerCase())
      .where('dust_signalled', '<', cap)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** The workflow ids of every execution with a deposit address on `chain` (reconciliation reads their records). */
  async workflowIds(chain: string): Promise<string[]> {
    const rows = await this.database.db.selectFrom('deposit_addresses').select('workflow_id').where('chain', '=', chain).execute();
    return rows.map((r) => r.workflow_id);
  }

  /** How many deposit addresses `chain` has (the watcher re-reads its list of them when this changes: rows are never deleted). */
  async count(chain: string): Promise<number> {
    const row = await this.database.db
      .selectFrom('deposit_addresses')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .where('chain', '=', chain)
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  }

  /** Every deposit address of `chain`, lowercase. */
  async all(chain: string): Promise<string[]> {
    const rows = await this.database.db.selectFrom('deposit_addresses').select('address').where('chain', '=', chain).execute();
    return rows.map((r) => r.address);
  }

  /**
   * Those of `addresses` (any case) that the service pays from on `chain`, lowercase: its deposit
   * addresses (their refunds and cancels) and its gas accounts (their top-ups of deposit
   * addresses, db/gas-account.ts). A transfer they pay is never a deposit nor money owed.
   */
  async servicePayers(chain: string, addresses: readonly string[]): Promise<Set<string>> {
    const found = new Set<string>();
    const wanted = [...new Set(addresses.map((a) => a.toLowerCase()))];
    for (let i = 0; i < wanted.length; i += 500) {
      const slice = wanted.slice(i, i + 500);
      const rows = await this.database.db
        .selectFrom('deposit_addresses')
        .select('address')
        .where('chain', '=', chain)
        .where('address', 'in', slice)
        .union((eb) => eb.selectFrom('gas_accounts').select('address').where('chain', '=', chain).where('address', 'in', slice))
        .execute();
      for (const r of rows) found.add(r.address);
    }
    return found;
  }

  /** The `limit` newest registered addresses of every chain (of one derivation, if given), with their executions (`npm run seed -- verify` and a worker's start derive them again). */
  async newest(
    limit: number,
    derivation?: KeyDerivation,
  ): Promise<Array<{ chain: string; address: string; workflowId: string; derivation: KeyDerivation }>> {
    const rows = await this.database.db
      .selectFrom('deposit_addresses')
      .select(['chain', 'address', 'workflow_id', 'key_derivation'])
      .$if(derivation !== undefined, (q) => q.where('key_derivation', '=', derivation!))
      .orderBy('created_at', 'desc')
      .orderBy('address')
      .limit(limit)
      .execute();
    return rows.map((r) => ({
      chain: r.chain,
      address: r.address,
      workflowId: r.workflow_id,
      derivation: r.key_derivation as KeyDerivation,
    }));
  }

  /** The executions of those of `addresses` (any case) that are deposit addresses on `chain`, by lowercase address. */
  async lookup(chain: string, addresses: readonly string[]): Promise<Map<string, DepositAddressOwner>> {
    const found = new Map<string, DepositAddressOwner>();
    const wanted = [...new Set(addresses.map((a) => a.toLowerCase()))];
    for (let i = 0; i < wanted.length; i += 500) {
      const rows = await this.database.db
        .selectFrom('deposit_addresses')
        .select(['address', 'workflow_id', 'min_amount', 'asset'])
        .where('chain', '=', chain)
        .where('address', 'in', wanted.slice(i, i + 500))
        .execute();
      for (const r of rows) found.set(r.address, { workflowId: r.workflow_id, minAmount: r.min_amount, asset: r.asset });
    }
    return found;
  }
}
