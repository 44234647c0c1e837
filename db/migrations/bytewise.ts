import { sql, type ColumnDefinitionBuilder } from 'kysely';
import type { DatabaseKind } from '../database';

/**
 * A NOT NULL text column compared byte by byte. Keyset pagination compares execution ids; byte
 * order keeps it the same on both engines (PostgreSQL would otherwise use the database's locale
 * collation).
 */
export const bytewiseColumn = (kind: DatabaseKind) => (c: ColumnDefinitionBuilder) =>
  kind === 'postgres' ? c.notNull().modifyFront(sql`collate "C"`) : c.notNull();
