import type { Database } from './database';
import { transferKey, type ChainTransfer } from '../domain/chain-watcher';

/**
 * The chain watcher's progress kept outside its workflow's history (docs/decisions/0080): its last
 * confirmed block per chain (`chain_checkpoints`) and the transfers it signalled near it
 * (`chain_signals`). A new watcher run resumes from them (domain/chain-watcher resumeState).
 */
export class WatcherProgressStore {
  constructor(private readonly database: Database) {}

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
