import type { Kysely, Migration } from 'kysely';
import type { DatabaseKind } from '../database';
import { bytewiseColumn } from './bytewise';

/** Migrations 0001 to 0009: the executions, the API's rate limits, the deposit addresses and the refunds ledger as they first shipped. */
export function readModelMigrations(kind: DatabaseKind): Record<string, Migration> {
  const bytewise = bytewiseColumn(kind);
  return {
    '0001-executions': {
      async up(db: Kysely<any>) {
        await db.schema
          .createTable('executions')
          .addColumn('workflow_id', 'text', (c) => c.primaryKey())
          .addColumn('wallet', 'text', bytewise)
          .addColumn('execution_id', 'text', bytewise)
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('version', 'integer', (c) => c.notNull())
          .addColumn('created_at', 'text', bytewise)
          .addColumn('updated_at', 'text', (c) => c.notNull())
          .addColumn('record', 'text', (c) => c.notNull())
          .addColumn('projected_at', 'text', (c) => c.notNull())
          .execute();
        // The list route: one wallet, newest first, optionally some statuses.
        await db.schema
          .createIndex('executions_wallet_created')
          .on('executions')
          .columns(['wallet', 'created_at desc', 'execution_id desc'])
          .execute();
        await db.schema
          .createIndex('executions_wallet_status_created')
          .on('executions')
          .columns(['wallet', 'status', 'created_at desc', 'execution_id desc'])
          .execute();
      },
      async down(db: Kysely<any>) {
        await db.schema.dropTable('executions').execute();
      },
    },
    // The API's rate-limit counters, shared by every API process of a cluster (api/http/rate-limit.ts),
    // in the shape rate-limiter-flexible's PostgreSQL limiter reads. SQLite serves one machine,
    // where each API counts in its own memory; the table exists there too, unused.
    '0002-rate-limits': {
      async up(db: Kysely<any>) {
        await db.schema
          .createTable('rate_limits')
          .addColumn('key', 'varchar(255)', (c) => c.primaryKey())
          .addColumn('points', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('expire', 'bigint')
          .execute();
      },
      async down(db: Kysely<any>) {
        await db.schema.dropTable('rate_limits').execute();
      },
    },
    // Deposit addresses by chain, for the chain watcher's join (db/deposit-addresses.ts).
    '0003-deposit-addresses': {
      async up(db: Kysely<any>) {
        await db.schema
          .createTable('deposit_addresses')
          .addColumn('chain', 'text', (c) => c.notNull())
          .addColumn('address', 'text', (c) => c.notNull())
          .addColumn('workflow_id', 'text', (c) => c.notNull())
          .addColumn('min_amount', 'text', (c) => c.notNull())
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addPrimaryKeyConstraint('deposit_addresses_pk', ['chain', 'address'])
          .execute();
      },
      async down(db: Kysely<any>) {
        await db.schema.dropTable('deposit_addresses').execute();
      },
    },
    // How many transfers below its minAmount the chain watcher has signalled for each address: it
    // stops at DUST_TRANSFERS_PER_ADDRESS, so that nobody can grow an execution with 1-wei transfers.
    '0004-deposit-address-dust': {
      async up(db: Kysely<any>) {
        await db.schema
          .alterTable('deposit_addresses')
          .addColumn('dust_signalled', 'integer', (c) => c.notNull().defaultTo(0))
          .execute();
      },
      async down(db: Kysely<any>) {
        await db.schema.alterTable('deposit_addresses').dropColumn('dust_signalled').execute();
      },
    },
    // Deposits the service did not take, one row each, owed back to whoever sent them
    // (db/refund-ledger.ts). Rows are written by whoever sees the refusal once the execution has
    // closed: the API for a late report, the chain watcher for a transfer to a closed execution.
    '0005-refund-ledger': {
      async up(db: Kysely<any>) {
        await db.schema
          .createTable('refunds')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('workflow_id', 'text', (c) => c.notNull())
          .addColumn('wallet', 'text', (c) => c.notNull())
          .addColumn('execution_id', 'text', (c) => c.notNull())
          .addColumn('chain', 'text')
          .addColumn('tx_hash', 'text', (c) => c.notNull())
          .addColumn('transfer_index', 'integer', (c) => c.notNull())
          .addColumn('amount', 'text')
          .addColumn('asset', 'text')
          .addColumn('reason', 'text', (c) => c.notNull())
          .addColumn('reported_by', 'text', (c) => c.notNull())
          .addColumn('state', 'text', (c) => c.notNull())
          .addColumn('created_at', 'text', bytewise)
          .execute();
        await db.schema.createIndex('refunds_state_created').on('refunds').columns(['state', 'created_at desc', 'id desc']).execute();
        await db.schema.createIndex('refunds_workflow').on('refunds').column('workflow_id').execute();
      },
      async down(db: Kysely<any>) {
        await db.schema.dropTable('refunds').execute();
      },
    },
    '0006-refund-settlement': {
      async up(db: Kysely<any>) {
        await db.schema.alterTable('refunds').addColumn('settled_at', 'text').execute();
        await db.schema.alterTable('refunds').addColumn('refund_tx_hash', 'text').execute();
        await db.schema.alterTable('refunds').addColumn('waived_reason', 'text').execute();
        await db.schema.alterTable('refunds').addColumn('settled_by', 'text').execute();
        await db.schema.createIndex('refunds_wallet_created').on('refunds').columns(['wallet', 'created_at desc', 'id desc']).execute();
      },
      async down(db: Kysely<any>) {
        await db.schema.dropIndex('refunds_wallet_created').execute();
        for (const column of ['settled_by', 'waived_reason', 'refund_tx_hash', 'settled_at'])
          await db.schema.alterTable('refunds').dropColumn(column).execute();
      },
    },
    '0007-refund-announcements': {
      async up(db: Kysely<any>) {
        // Set once the row's refund.due webhook is handed to its delivery workflow: an outbox.
        await db.schema.alterTable('refunds').addColumn('announced_at', 'text').execute();
        await db.schema.createIndex('refunds_announced').on('refunds').columns(['announced_at', 'created_at', 'id']).execute();
      },
      async down(db: Kysely<any>) {
        await db.schema.dropIndex('refunds_announced').execute();
        await db.schema.alterTable('refunds').dropColumn('announced_at').execute();
      },
    },
    '0008-refund-sender': {
      async up(db: Kysely<any>) {
        // Who sent the transfer: where a refund would go back to, when the chain says.
        await db.schema.alterTable('refunds').addColumn('sender', 'text').execute();
      },
      async down(db: Kysely<any>) {
        await db.schema.alterTable('refunds').dropColumn('sender').execute();
      },
    },
    '0009-refund-payer-kind': {
      async up(db: Kysely<any>) {
        // Whether the sender (the transfer's payer) is an EOA or a contract: a refund to a contract may wait for a person.
        await db.schema.alterTable('refunds').addColumn('payer_kind', 'text').execute();
      },
      async down(db: Kysely<any>) {
        await db.schema.alterTable('refunds').dropColumn('payer_kind').execute();
      },
    },
  };
}
