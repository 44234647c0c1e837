import type { Database } from './database';
import { transferKey, type ChainTransfer } from '../domain/chain-watcher';

export interface DepositAddressRow {
  chain: string;
  /** Any case; stored and matched lowercase. */
  address: string;
  workflowId: string;
  minAmount: string;
  /** What the address takes: `native` (the default) or `erc20:<token address>`. */
  asset?: string;
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
   * Registers an address for an execution; idempotent (the same row again changes nothing).
   * Throws when the address is already another execution's: derivation makes that impossible
   * short of a seed mix-up, which must not go unnoticed.
   */
  async register(row: DepositAddressRow, now = new Date()): Promise<void> {
    const address = row.address.toLowerCase();
    await this.database.db
      .insertInto('deposit_addresses')
      .values({
        chain: row.chain,
        address,
        workflow_id: row.workflowId,
        min_amount: row.minAmount,
        asset: (row.asset ?? 'native').toLowerCase(),
        created_at: now.toISOString(),
      })
      .onConflict((oc) => oc.columns(['chain', 'address']).doNothing())
      .execute();
    const stored = await this.database.db
      .selectFrom('deposit_addresses')
      .select('workflow_id')
      .where('chain', '=', row.chain)
      .where('address', '=', address)
      .executeTakeFirst();
    if (stored?.workflow_id !== row.workflowId)
      throw new Error(`deposit address ${address} on ${row.chain} belongs to another execution (${stored?.workflow_id ?? 'none'})`);
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

  /** The chain watcher's last confirmed block on `chain` (db: chain_checkpoints), or undefined before its first. */
  async checkpoint(chain: string): Promise<{ number: number; hash: string } | undefined> {
    const row = await this.database.db.selectFrom('chain_checkpoints').selectAll().where('chain', '=', chain).executeTakeFirst();
    return row && { number: Number(row.block_number), hash: row.block_hash };
  }

  /**
   * Records the chain watcher's last confirmed block (every transfer at or below it was signalled
   * or owed; it moves back when a reorganisation does), and forgets the signals more than
   * `keepBlocks` below it.
   */
  async saveCheckpoint(chain: string, block: { number: number; hash: string }, keepBlocks: number, now = new Date()): Promise<void> {
    // Signals far below the checkpoint can no longer be reorganised within the window.
    await this.database.db
      .deleteFrom('chain_signals')
      .where('chain', '=', chain)
      .where('block_number', '<', block.number - keepBlocks)
      .execute();
    await this.database.db
      .insertInto('chain_checkpoints')
      .values({ chain, block_number: block.number, block_hash: block.hash, updated_at: now.toISOString() })
      .onConflict((oc) =>
        oc.column('chain').doUpdateSet({
          block_number: (eb) => eb.ref('excluded.block_number'),
          block_hash: (eb) => eb.ref('excluded.block_hash'),
          updated_at: (eb) => eb.ref('excluded.updated_at'),
        }),
      )
      .execute();
  }

  /** Records transfers the watcher signalled or owed (a transfer mined again replaces its entry). */
  async saveSignals(chain: string, transfers: readonly ChainTransfer[]): Promise<void> {
    for (const t of transfers) {
      const { reorged: _, ...kept } = t;
      await this.database.db
        .insertInto('chain_signals')
        .values({ chain, transfer_key: transferKey(t), block_number: t.blockNumber, transfer: JSON.stringify(kept) })
        .onConflict((oc) =>
          oc.columns(['chain', 'transfer_key']).doUpdateSet({
            block_number: (eb) => eb.ref('excluded.block_number'),
            transfer: (eb) => eb.ref('excluded.transfer'),
          }),
        )
        .execute();
    }
  }

  /** Forgets signalled transfers a reorganisation removed (reported): a new run does not report them again. */
  async forgetSignals(chain: string, transfers: ReadonlyArray<Parameters<typeof transferKey>[0]>): Promise<void> {
    if (transfers.length === 0) return;
    await this.database.db
      .deleteFrom('chain_signals')
      .where('chain', '=', chain)
      .where('transfer_key', 'in', transfers.map(transferKey))
      .execute();
  }

  /** The signalled transfers kept for `chain`. */
  async signals(chain: string): Promise<ChainTransfer[]> {
    const rows = await this.database.db.selectFrom('chain_signals').select('transfer').where('chain', '=', chain).execute();
    return rows.map((r) => JSON.parse(r.transfer) as ChainTransfer);
  }
}
