import { Migrator, sql, type ColumnDefinitionBuilder, type Kysely, type Migration } from 'kysely';
import type { DatabaseKind } from './database';

/**
 * The read model's versioned migrations, in order. Each is applied once per database (Kysely's
 * `kysely_migration` table records them, its lock table keeps two processes from applying one
 * twice). Never edit a released migration: add the next one.
 */
export function migrations(kind: DatabaseKind): Record<string, Migration> {
  // Keyset pagination compares execution ids; byte order keeps it the same on both engines
  // (PostgreSQL would otherwise use the database's locale collation).
  const bytewise = (c: ColumnDefinitionBuilder) => (kind === 'postgres' ? c.notNull().modifyFront(sql`collate "C"`) : c.notNull());
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
    // What the chain watcher needs to stay honest under attack: its last confirmed block outside its
    // history (a restarted watcher resumes there, never at the head), each deposit address's asset
    // (a transfer it can never take is told apart in the round that reads it), and ledger rows that
    // leave `due` when a reorganisation removes their transfer (void) and come back when it is mined
    // again, each change announced in order; a row may stand for a block's dust to one address.
    '0010-chain-proven-ledger': {
      async up(db: Kysely<any>) {
        await db.schema
          .createTable('chain_checkpoints')
          .addColumn('chain', 'text', (c) => c.primaryKey())
          .addColumn('block_number', 'bigint', (c) => c.notNull())
          .addColumn('block_hash', 'text', (c) => c.notNull())
          .addColumn('updated_at', 'text', (c) => c.notNull())
          .execute();
        // The transfers the watcher signalled (or owed) near its checkpoint: a new run reports the
        // ones a reorganisation removed while no run was watching.
        await db.schema
          .createTable('chain_signals')
          .addColumn('chain', 'text', (c) => c.notNull())
          .addColumn('transfer_key', 'text', (c) => c.notNull())
          .addColumn('block_number', 'bigint', (c) => c.notNull())
          .addColumn('transfer', 'text', (c) => c.notNull())
          .addPrimaryKeyConstraint('chain_signals_pk', ['chain', 'transfer_key'])
          .execute();
        await db.schema.createIndex('chain_signals_block').on('chain_signals').columns(['chain', 'block_number']).execute();
        await db.schema
          .alterTable('deposit_addresses')
          .addColumn('asset', 'text', (c) => c.notNull().defaultTo('native'))
          .execute();
        await db.schema.alterTable('refunds').addColumn('voided_at', 'text').execute();
        await db.schema.alterTable('refunds').addColumn('void_reason', 'text').execute();
        await db.schema
          .alterTable('refunds')
          .addColumn('transfers', 'integer', (c) => c.notNull().defaultTo(1))
          .execute();
        await db.schema.alterTable('refunds').addColumn('hold_reason', 'text').execute();
        await db.schema
          .alterTable('refunds')
          .addColumn('events', 'integer', (c) => c.notNull().defaultTo(1))
          .execute();
        await db.schema
          .alterTable('refunds')
          .addColumn('announced_events', 'integer', (c) => c.notNull().defaultTo(0))
          .execute();
        await db.updateTable('refunds').set({ announced_events: 1 }).where('announced_at', 'is not', null).execute();
        await db.schema.createIndex('refunds_events').on('refunds').columns(['announced_events', 'events']).execute();
      },
      async down(db: Kysely<any>) {
        await db.schema.dropIndex('refunds_events').execute();
        for (const column of ['announced_events', 'events', 'hold_reason', 'transfers', 'void_reason', 'voided_at'])
          await db.schema.alterTable('refunds').dropColumn(column).execute();
        await db.schema.alterTable('deposit_addresses').dropColumn('asset').execute();
        await db.schema.dropTable('chain_signals').execute();
        await db.schema.dropTable('chain_checkpoints').execute();
      },
    },
    // Refunds paid by the service (decision 0081): where an address's refunds go, how many
    // transactions were mined from it (the nonce its next refund must find), and on each row the
    // refund's nonce, destination, signed variants and outcome; a row waiting for a person is `held`.
    '0011-refunds-paid-by-service': {
      async up(db: Kysely<any>) {
        await db.schema.alterTable('deposit_addresses').addColumn('refund_address', 'text').execute();
        await db.schema
          .alterTable('deposit_addresses')
          .addColumn('refund_nonces_mined', 'integer', (c) => c.notNull().defaultTo(0))
          .execute();
        await db.schema.alterTable('refunds').addColumn('refund_nonce', 'integer').execute();
        await db.schema.alterTable('refunds').addColumn('refund_to', 'text').execute();
        await db.schema.alterTable('refunds').addColumn('refund_variants', 'text').execute();
        await db.schema.alterTable('refunds').addColumn('refund_block', 'bigint').execute();
        await db.schema.alterTable('refunds').addColumn('refund_value', 'text').execute();
        await db.updateTable('refunds').set({ state: 'held' }).where('state', '=', 'due').where('hold_reason', 'is not', null).execute();
        await db.schema.createIndex('refunds_state_chain').on('refunds').columns(['state', 'chain']).execute();
        await db.schema.createIndex('deposit_addresses_workflow').on('deposit_addresses').column('workflow_id').execute();
      },
      async down(db: Kysely<any>) {
        await db.schema.dropIndex('deposit_addresses_workflow').execute();
        await db.schema.dropIndex('refunds_state_chain').execute();
        await db.updateTable('refunds').set({ state: 'due' }).where('state', 'in', ['held', 'paying']).execute();
        for (const column of ['refund_value', 'refund_block', 'refund_variants', 'refund_to', 'refund_nonce'])
          await db.schema.alterTable('refunds').dropColumn(column).execute();
        await db.schema.alterTable('deposit_addresses').dropColumn('refund_nonces_mined').execute();
        await db.schema.alterTable('deposit_addresses').dropColumn('refund_address').execute();
      },
    },
    // A person's approval of a refund above the chain's limit: which token approved it, and when.
    '0012-refund-approvals': {
      async up(db: Kysely<any>) {
        await db.schema.alterTable('refunds').addColumn('approved_by', 'text').execute();
        await db.schema.alterTable('refunds').addColumn('approved_at', 'text').execute();
      },
      async down(db: Kysely<any>) {
        await db.schema.alterTable('refunds').dropColumn('approved_at').execute();
        await db.schema.alterTable('refunds').dropColumn('approved_by').execute();
      },
    },
    // Whether an address is a deposit address on any chain (a prepare's refundAddress never is, nor
    // a refund's destination): its primary key leads with the chain, so the address alone gets an index.
    '0013-deposit-addresses-by-address': {
      async up(db: Kysely<any>) {
        await db.schema.createIndex('deposit_addresses_address').on('deposit_addresses').column('address').execute();
      },
      async down(db: Kysely<any>) {
        await db.schema.dropIndex('deposit_addresses_address').execute();
      },
    },
    // What the refunder's transactions that paid nobody (a cancel, a refund mined with status 0)
    // cost a row: a later refund of it pays that much less, so the address's other money stays.
    '0014-refund-fees-spent': {
      async up(db: Kysely<any>) {
        await db.schema.alterTable('refunds').addColumn('fees_spent', 'text').execute();
      },
      async down(db: Kysely<any>) {
        await db.schema.alterTable('refunds').dropColumn('fees_spent').execute();
      },
    },
    // The refund.paid outbox: when a refunded row's webhook was handed to its delivery workflow.
    // Rows refunded before it are marked announced: their settlement was never promised a webhook.
    '0015-refund-paid-announced': {
      async up(db: Kysely<any>) {
        await db.schema.alterTable('refunds').addColumn('paid_announced_at', 'text').execute();
        await db
          .updateTable('refunds')
          .set({ paid_announced_at: sql`settled_at` })
          .where('state', '=', 'refunded')
          .execute();
      },
      async down(db: Kysely<any>) {
        await db.schema.alterTable('refunds').dropColumn('paid_announced_at').execute();
      },
    },
    // A depositor who knows only their transaction finds its executions: the deposit each record
    // took, its chain and lowercase txHash, as columns the execution store writes with every record
    // (rows written before are filled in from their JSON here); the ledger's rows by transaction.
    '0016-deposit-lookup': {
      async up(db: Kysely<any>) {
        await db.schema.alterTable('executions').addColumn('deposit_chain', 'text').execute();
        await db.schema.alterTable('executions').addColumn('deposit_tx_hash', 'text').execute();
        const field = (name: string) =>
          kind === 'postgres'
            ? sql`(record::jsonb -> 'deposit' ->> ${sql.lit(name)})`
            : sql`json_extract(record, ${sql.lit('$.deposit.' + name)})`;
        await db
          .updateTable('executions')
          .set({ deposit_chain: field('chain'), deposit_tx_hash: sql`lower(${field('txHash')})` })
          .where(field('txHash'), 'is not', null)
          .execute();
        await db.schema.createIndex('executions_deposit_tx').on('executions').column('deposit_tx_hash').execute();
        // Any case of a hash a report stored: the lookup asks for lower(tx_hash).
        await db.schema
          .createIndex('refunds_tx')
          .on('refunds')
          .expression(sql`lower(tx_hash)`)
          .execute();
      },
      async down(db: Kysely<any>) {
        await db.schema.dropIndex('refunds_tx').execute();
        await db.schema.dropIndex('executions_deposit_tx').execute();
        await db.schema.alterTable('executions').dropColumn('deposit_tx_hash').execute();
        await db.schema.alterTable('executions').dropColumn('deposit_chain').execute();
      },
    },
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
