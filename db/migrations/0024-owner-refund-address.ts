import type { Kysely, Migration } from 'kysely';
import type { DatabaseKind } from '../database';

/** Migration 0024: the refund address an execution's owner set by a signed command (decision 0098). */
export function ownerRefundAddressMigrations(_kind: DatabaseKind): Record<string, Migration> {
  return {
    // Per deposit address: where the owner's command sends refunds of its own deposit and of the
    // transfers of that deposit's payer, the payer and the deposit's transaction it covers, and the
    // command's timestamp and signature (an older or replayed command changes nothing).
    '0024-owner-refund-address': {
      async up(db: Kysely<any>) {
        for (const column of ['owner_refund_address', 'owner_refund_payer', 'owner_refund_tx', 'owner_refund_signature'])
          await db.schema.alterTable('deposit_addresses').addColumn(column, 'text').execute();
        await db.schema.alterTable('deposit_addresses').addColumn('owner_refund_at', 'bigint').execute();
      },
      async down(db: Kysely<any>) {
        for (const column of ['owner_refund_at', 'owner_refund_signature', 'owner_refund_tx', 'owner_refund_payer', 'owner_refund_address'])
          await db.schema.alterTable('deposit_addresses').dropColumn(column).execute();
      },
    },
  };
}
