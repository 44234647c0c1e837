import type { Transaction } from 'kysely';
import type { WorkerBound } from '../domain/worker-capacity';
import type { Database } from './database';
import type { ReadModelTables } from './tables';

/** What a worker announces of itself (decision 0107). */
export interface WorkerAnnouncement {
  workerId: string;
  /** Undefined for an unversioned worker. */
  buildId?: string;
  openRuns: number;
  /** Whether new runs go to the worker's build: its deployment's current version, or no versioning. */
  current: boolean;
}

/**
 * The workers' announcements in the read model that every API shares: each worker renews its row
 * every few seconds with a time after which it stops counting, and deletes it when it stops.
 */
export class WorkerCapacityStore {
  constructor(private readonly database: Database) {}

  /** Writes (or renews) the worker's row, counting until `expiresAt`. */
  async announce(worker: WorkerAnnouncement, expiresAt: Date): Promise<void> {
    const row = {
      build_id: worker.buildId ?? null,
      open_runs: worker.openRuns,
      current: worker.current ? 1 : 0,
      expires_at: expiresAt.toISOString(),
    };
    await this.database.db
      .insertInto('worker_capacity')
      .values({ worker_id: worker.workerId, ...row })
      .onConflict((oc) => oc.column('worker_id').doUpdateSet(row))
      .execute();
  }

  /** Takes a stopping worker's row out at once; rows long expired go with it. */
  async withdraw(workerId: string, now = new Date()): Promise<void> {
    await this.database.db
      .deleteFrom('worker_capacity')
      .where((eb) => eb.or([eb('worker_id', '=', workerId), eb('expires_at', '<', new Date(now.getTime() - 3_600_000).toISOString())]))
      .execute();
  }

  /** The live workers of the current build (in `trx`, when the count is part of an admission). */
  async liveCurrent(now: Date, trx?: Transaction<ReadModelTables>): Promise<WorkerBound[]> {
    const rows = await (trx ?? this.database.db)
      .selectFrom('worker_capacity')
      .select(['open_runs'])
      .where('current', '=', 1)
      .where('expires_at', '>', now.toISOString())
      .execute();
    return rows.map((r) => ({ openRuns: Number(r.open_runs) }));
  }
}
