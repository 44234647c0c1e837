import { sql, type Kysely, type Migration } from 'kysely';
import type { DatabaseKind } from '../database';

/** Migrations 0010 to 0016: the chain watcher's checkpoints and signals, refunds paid by the service, approvals, and the deposit lookup. */
export function chainAndRefundsMigrations(kind: DatabaseKind): Record<string, Migration> {
  return {
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
  };
}
