import type { Kysely, Migration } from 'kysely';
import type { DatabaseKind } from '../database';

/** Migrations from 0021: refunds that no outsider can stop (fair sweeps, decisions read twice), keys the API does not hold. */
export function fairRefundsMigrations(_kind: DatabaseKind): Record<string, Migration> {
  return {
    // When the refund sweep last handed each deposit address to a refund workflow (the sweep takes
    // those it handed out longest ago first), and the block at which a refund's or a gas top-up's
    // nonce was first seen used with none of its transactions mined (looked at again before the row
    // is held or the top-up recorded lost).
    '0021-refund-sweep-turns': {
      async up(db: Kysely<any>) {
        await db.schema.alterTable('deposit_addresses').addColumn('refund_swept_at', 'text').execute();
        await db.schema.alterTable('refunds').addColumn('nonce_gone_seen_block', 'bigint').execute();
        await db.schema.alterTable('gas_topups').addColumn('nonce_gone_seen_block', 'bigint').execute();
      },
      async down(db: Kysely<any>) {
        await db.schema.alterTable('gas_topups').dropColumn('nonce_gone_seen_block').execute();
        await db.schema.alterTable('refunds').dropColumn('nonce_gone_seen_block').execute();
        await db.schema.alterTable('deposit_addresses').dropColumn('refund_swept_at').execute();
      },
    },
    // How each deposit address's key derives from the seed: every address issued before this
    // migration by HMAC (`hmac-v0`); new ones by BIP32 from the public key the API holds.
    '0022-deposit-key-derivation': {
      async up(db: Kysely<any>) {
        await db.schema
          .alterTable('deposit_addresses')
          .addColumn('key_derivation', 'text', (c) => c.notNull().defaultTo('hmac-v0'))
          .execute();
      },
      async down(db: Kysely<any>) {
        await db.schema.alterTable('deposit_addresses').dropColumn('key_derivation').execute();
      },
    },
  };
}
