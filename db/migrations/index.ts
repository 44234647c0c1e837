import { Migrator, type Kysely, type Migration } from 'kysely';
import type { DatabaseKind } from '../database';
import { readModelMigrations } from './0001-0009-read-model';
import { chainAndRefundsMigrations } from './0010-0016-chain-and-refunds';
import { tokensAndAdmissionsMigrations } from './0017-0020-tokens-and-admissions';
import { fairRefundsMigrations } from './0021-0029-fair-refunds';
import { ownerRefundAddressMigrations } from './0024-owner-refund-address';
import { workerCapacityMigrations } from './0025-worker-capacity';

/**
 * The read model's versioned migrations, in order. Each is applied once per database (Kysely's
 * `kysely_migration` table records them, its lock table keeps two processes from applying one
 * twice). Never edit a released migration: add the next one, to the newest range's file (or a
 * new range file, listed here).
 */
export function migrations(kind: DatabaseKind): Record<string, Migration> {
  return {
    ...readModelMigrations(kind),
    ...chainAndRefundsMigrations(kind),
    ...tokensAndAdmissionsMigrations(kind),
    ...fairRefundsMigrations(kind),
    ...ownerRefundAddressMigrations(kind),
    ...workerCapacityMigrations(kind),
  };
}

/** The migrations this build has and those a database records as applied. */
export interface MigrationStatus {
  /** This build's migrations not applied to the database. */
  readonly pending: string[];
  /** Migrations the database records that this build does not have (a newer build applied them). */
  readonly unknown: string[];
  /** The last migration the database records, if any. */
  readonly last?: string;
}

/** Reads which migrations a database has, changing nothing (a database never migrated has none). */
export async function migrationStatus(db: Kysely<any>, kind: DatabaseKind): Promise<MigrationStatus> {
  const known = Object.keys(migrations(kind)).sort();
  const tables = await db.introspection.getTables({ withInternalKyselyTables: true });
  const applied = tables.some((t) => t.name === 'kysely_migration')
    ? ((await db.selectFrom('kysely_migration').select('name').execute()) as Array<{ name: string }>).map((r) => r.name).sort()
    : [];
  return {
    pending: known.filter((m) => !applied.includes(m)),
    unknown: applied.filter((m) => !known.includes(m)),
    last: applied[applied.length - 1],
  };
}

/** Applies every migration not yet applied; throws with the failing migration's name. */
export async function migrateToLatest(db: Kysely<any>, kind: DatabaseKind): Promise<string[]> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations(kind) } });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error)
    throw new Error(`migration ${failed?.migrationName ?? '(unknown)'} failed: ${(error as Error).message ?? String(error)}`, {
      cause: error,
    });
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
