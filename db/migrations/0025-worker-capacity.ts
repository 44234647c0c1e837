import type { Kysely, Migration } from 'kysely';
import type { DatabaseKind } from '../database';

/** Migration 0025: the workers' announced bounds, which the API's admission sums (decision 0107). */
export function workerCapacityMigrations(_kind: DatabaseKind): Record<string, Migration> {
  return {
    // One row per live worker process: the open runs it takes, its build, whether that build is
    // its deployment's current one (new runs go there), and until when the row counts unless renewed.
    '0025-worker-capacity': {
      async up(db: Kysely<any>) {
        await db.schema
          .createTable('worker_capacity')
          .addColumn('worker_id', 'text', (c) => c.primaryKey())
          .addColumn('build_id', 'text')
          .addColumn('open_runs', 'integer', (c) => c.notNull())
          .addColumn('current', 'integer', (c) => c.notNull())
          .addColumn('expires_at', 'text', (c) => c.notNull())
          .execute();
      },
      async down(db: Kysely<any>) {
        await db.schema.dropTable('worker_capacity').execute();
      },
    },
  };
}
