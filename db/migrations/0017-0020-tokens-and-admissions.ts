import { sql, type Kysely, type Migration } from 'kysely';
import type { DatabaseKind } from '../database';
import { bytewiseColumn } from './bytewise';

/** Migrations 0017 to 0020: token refunds and the gas account, admissions, the refund.held outbox, open executions by status. */
export function tokensAndAdmissionsMigrations(kind: DatabaseKind): Record<string, Migration> {
  const bytewise = bytewiseColumn(kind);
  return {
    // Token refunds (docs/decisions/0085-token-refunds-and-the-gas-account.md): the gas account of
    // each chain, its top-ups of deposit addresses, and what a token refund left of its top-ups.
    '0017-token-refunds': {
      async up(db: Kysely<any>) {
        await db.schema
          .createTable('gas_accounts')
          .addColumn('chain', 'text', (c) => c.notNull())
          .addColumn('address', 'text', (c) => c.notNull())
          .addColumn('nonces_mined', 'integer', (c) => c.notNull())
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addPrimaryKeyConstraint('gas_accounts_pk', ['chain', 'address'])
          .execute();
        await db.schema
          .createTable('gas_topups')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('chain', 'text', (c) => c.notNull())
          .addColumn('account', 'text', (c) => c.notNull())
          .addColumn('nonce', 'integer', (c) => c.notNull())
          .addColumn('refund_id', 'text', (c) => c.notNull())
          .addColumn('to_address', 'text', (c) => c.notNull())
          .addColumn('value', 'text', (c) => c.notNull())
          .addColumn('variants', 'text', (c) => c.notNull())
          .addColumn('state', 'text', (c) => c.notNull())
          .addColumn('block', 'bigint')
          .addColumn('tx_hash', 'text')
          .addColumn('fee', 'text')
          .addColumn('created_at', 'text', (c) => c.notNull())
          .execute();
        // One transaction per nonce of a gas account: two workers can never both sign its next one.
        await db.schema.createIndex('gas_topups_nonce').on('gas_topups').columns(['chain', 'account', 'nonce']).unique().execute();
        await db.schema.createIndex('gas_topups_refund').on('gas_topups').column('refund_id').execute();
        await db.schema.alterTable('refunds').addColumn('gas_left', 'text').execute();
        // Rows held because an older version paid no token refund: this one does.
        await db
          .updateTable('refunds')
          .set({ state: 'due', hold_reason: null })
          .where('state', '=', 'held')
          .where('hold_reason', '=', 'token')
          .execute();
      },
      async down(db: Kysely<any>) {
        await db
          .updateTable('refunds')
          .set({ state: 'held', hold_reason: 'token' })
          .where('state', '=', 'due')
          .where('asset', 'like', 'erc20:%')
          .execute();
        await db.schema.alterTable('refunds').dropColumn('gas_left').execute();
        await db.schema.dropTable('gas_topups').execute();
        await db.schema.dropTable('gas_accounts').execute();
      },
    },
    // Admission (docs/decisions/0082): a prepare reserves its execution's place here, in the same
    // transaction that counts the open executions, before its workflow starts; the row stops
    // counting once the execution's own row is in `executions`. Open executions are counted by status.
    '0018-admissions': {
      async up(db: Kysely<any>) {
        await db.schema
          .createTable('admissions')
          .addColumn('workflow_id', 'text', (c) => c.primaryKey())
          .addColumn('wallet', 'text', bytewise)
          .addColumn('admitted_at', 'text', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('admissions_wallet').on('admissions').column('wallet').execute();
        await db.schema.createIndex('executions_status').on('executions').column('status').execute();
      },
      async down(db: Kysely<any>) {
        await db.schema.dropIndex('executions_status').execute();
        await db.schema.dropTable('admissions').execute();
      },
    },
    // The refund.held outbox: the hold reason last handed to its webhook's delivery workflow. Rows
    // held before it are marked announced: their hold was never promised a webhook.
    '0019-refund-held-announced': {
      async up(db: Kysely<any>) {
        await db.schema.alterTable('refunds').addColumn('held_announced', 'text').execute();
        await db
          .updateTable('refunds')
          .set({ held_announced: sql`hold_reason` })
          .where('state', '=', 'held')
          .execute();
      },
      async down(db: Kysely<any>) {
        await db.schema.alterTable('refunds').dropColumn('held_announced').execute();
      },
    },
    // The open executions by status: counted at every prepare (admissions) and read by the worker's
    // catch-up of records their caller never wrote, without a scan of every record ever kept.
    '0020-executions-status': {
      async up(db: Kysely<any>) {
        await db.schema.createIndex('executions_status_projected').on('executions').columns(['status', 'projected_at']).execute();
      },
      async down(db: Kysely<any>) {
        await db.schema.dropIndex('executions_status_projected').execute();
      },
    },
  };
}
