import { sql } from 'kysely';
import type { ExecutionRecord, ExecutionStatus } from '../domain/execution-state';
import { recordVersion } from '../domain/execution-state';
import { admittedOpenRuns, type WorkerBound } from '../domain/worker-capacity';
import type { Database } from './database';
import { WorkerCapacityStore } from './worker-capacity';
import type { PagePosition } from './page-token';

/** The statuses of an execution whose workflow is open (waiting for a deposit or a signature). */
const OPEN_STATUSES: readonly ExecutionStatus[] = ['PREPARED', 'OPERATION_PENDING'];

/**
 * What `admit` lets in: `open`, the open executions of the whole service, a number or what the live
 * workers announce (`fromWorkers`, less `minus`: runs of other workflows they hold); `perWallet`,
 * one wallet's; either undefined for no bound. `graceMs`: how long a place whose execution has no
 * row yet counts.
 */
export interface AdmissionLimits {
  open?: number | { fromWorkers: { minus: number } };
  perWallet?: number;
  graceMs: number;
}

/** `admit`'s answer: admitted, or refused because the service (`capacity`) or the wallet (`wallet`) is full. */
export type Admission = 'admitted' | 'capacity' | 'wallet';

/** The key of the PostgreSQL transaction lock that serialises admissions across API processes. */
const ADMISSION_LOCK = 820_082;

export interface ExecutionPage {
  records: ExecutionRecord[];
  /** Set when more rows follow: the position of the last record of this page. */
  next?: PagePosition;
}

/**
 * The read model's queries on the `executions` table. Workflows never touch it: the API writes
 * the records its Updates answer, the worker's projectExecution activity the rest; the API reads.
 */
export class ExecutionStore {
  private readonly workers: WorkerCapacityStore;

  constructor(private readonly database: Database) {
    this.workers = new WorkerCapacityStore(database);
  }

  /**
   * Writes `record` unless the row already holds the same or a newer version: an idempotent
   * upsert keyed by workflow id, guarded by recordVersion, so a retried, replayed or late write
   * never replaces a newer record. Returns whether the row changed.
   */
  async upsert(workflowId: string, record: ExecutionRecord, now = new Date()): Promise<boolean> {
    const version = recordVersion(record);
    const row = {
      workflow_id: workflowId,
      wallet: record.wallet,
      execution_id: record.executionId,
      status: record.status,
      version,
      created_at: record.createdAt,
      updated_at: record.updatedAt,
      record: JSON.stringify(record),
      projected_at: now.toISOString(),
      // The deposit lookup's index (byDepositTx): the deposit the record took, its txHash lowercase.
      deposit_chain: record.deposit?.chain ?? null,
      deposit_tx_hash: record.deposit?.txHash.toLowerCase() ?? null,
    };
    const result = await this.database.db
      .insertInto('executions')
      .values(row)
      .onConflict((oc) =>
        oc
          .column('workflow_id')
          .doUpdateSet((eb) => ({
            status: eb.ref('excluded.status'),
            version: eb.ref('excluded.version'),
            updated_at: eb.ref('excluded.updated_at'),
            record: eb.ref('excluded.record'),
            projected_at: eb.ref('excluded.projected_at'),
            deposit_chain: eb.ref('excluded.deposit_chain'),
            deposit_tx_hash: eb.ref('excluded.deposit_tx_hash'),
          }))
          .where('executions.version', '<', version),
      )
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
  }

  /** Which of `workflowIds` have a row (ids only: no record is read), in one query per 500. */
  async withRows(workflowIds: readonly string[]): Promise<Set<string>> {
    const found = new Set<string>();
    for (let i = 0; i < workflowIds.length; i += 500) {
      const rows = await this.database.db
        .selectFrom('executions')
        .select('workflow_id')
        .where('workflow_id', 'in', workflowIds.slice(i, i + 500))
        .execute();
      for (const row of rows) found.add(row.workflow_id);
    }
    return found;
  }

  /** The stored records of several executions by workflow id (those it has), in one query per 500. */
  async getMany(workflowIds: readonly string[]): Promise<Map<string, ExecutionRecord>> {
    const found = new Map<string, ExecutionRecord>();
    for (let i = 0; i < workflowIds.length; i += 500) {
      const rows = await this.database.db
        .selectFrom('executions')
        .select(['workflow_id', 'record'])
        .where('workflow_id', 'in', workflowIds.slice(i, i + 500))
        .execute();
      for (const row of rows) found.set(row.workflow_id, JSON.parse(row.record) as ExecutionRecord);
    }
    return found;
  }

  /**
   * The executions whose record took a deposit of transaction `txHash` (any case) on `chain`, by
   * workflow id: one transaction may pay several. Found by the columns upsert writes with each record.
   */
  async byDepositTx(chain: string, txHash: string): Promise<Map<string, ExecutionRecord>> {
    const rows = await this.database.db
      .selectFrom('executions')
      .select(['workflow_id', 'record'])
      .where('deposit_tx_hash', '=', txHash.toLowerCase())
      .where('deposit_chain', '=', chain)
      .orderBy('workflow_id')
      .execute();
    return new Map(rows.map((r) => [r.workflow_id, JSON.parse(r.record) as ExecutionRecord]));
  }

  /**
   * Takes a place for the execution `workflowId` of `wallet` among the open executions, or refuses
   * it, atomically across every API sharing this read model: one transaction inserts the place, then
   * counts the open executions (rows PREPARED or OPERATION_PENDING, plus places whose execution has
   * no row yet, for `graceMs`), and rolls back over a limit. On SQLite the insert takes the
   * database's write lock first, so the count is serialised; on PostgreSQL a transaction lock does
   * it. A place already taken (a retried prepare) is admitted again without a count.
   */
  async admit(workflowId: string, wallet: string, limits: AdmissionLimits, now = new Date()): Promise<Admission> {
    if (limits.open === undefined && limits.perWallet === undefined) return 'admitted';
    const refused = new Error('admission refused');
    let answer: Admission = 'admitted';
    try {
      await this.database.db.transaction().execute(async (trx) => {
        if (this.database.kind === 'postgres') await sql`select pg_advisory_xact_lock(${ADMISSION_LOCK})`.execute(trx);
        const inserted = await trx
          .insertInto('admissions')
          .values({ workflow_id: workflowId, wallet, admitted_at: now.toISOString() })
          .onConflict((oc) => oc.column('workflow_id').doNothing())
          .executeTakeFirst();
        if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 0) return;
        // Places whose execution has its row now (counted by status from here on), or past their grace.
        await trx
          .deleteFrom('admissions')
          .where((eb) =>
            eb.or([
              eb('admitted_at', '<', new Date(now.getTime() - limits.graceMs).toISOString()),
              eb.exists(
                eb
                  .selectFrom('executions')
                  .select('executions.workflow_id')
                  .whereRef('executions.workflow_id', '=', 'admissions.workflow_id'),
              ),
            ]),
          )
          .execute();
        const count = async (of?: string) => {
          let executions = trx
            .selectFrom('executions')
            .select((eb) => eb.fn.countAll<number | string>().as('n'))
            .where('status', 'in', [...OPEN_STATUSES]);
          let places = trx.selectFrom('admissions').select((eb) => eb.fn.countAll<number | string>().as('n'));
          if (of !== undefined) {
            executions = executions.where('wallet', '=', of);
            places = places.where('wallet', '=', of);
          }
          return Number((await executions.executeTakeFirstOrThrow()).n) + Number((await places.executeTakeFirstOrThrow()).n);
        };
        // The workers' announcements are read in the same transaction: a worker that stopped
        // shrinks the bound for every admission after its row expired.
        const open =
          typeof limits.open === 'object'
            ? Math.max(0, admittedOpenRuns(await this.workers.liveCurrent(now, trx)) - limits.open.fromWorkers.minus)
            : limits.open;
        if (limits.perWallet !== undefined && (await count(wallet)) > limits.perWallet) answer = 'wallet';
        else if (open !== undefined && (await count()) > open) answer = 'capacity';
        if (answer !== 'admitted') throw refused;
      });
    } catch (err) {
      if (err !== refused) throw err;
    }
    return answer;
  }

  /** The bounds the live workers of the current build announce (decision 0107), as `admit` counts them. */
  liveWorkers(now: Date): Promise<WorkerBound[]> {
    return this.workers.liveCurrent(now);
  }

  /** Gives back the place of an execution whose workflow did not start. */
  async release(workflowId: string): Promise<void> {
    await this.database.db.deleteFrom('admissions').where('workflow_id', '=', workflowId).execute();
  }

  /**
   * OPERATION_PENDING executions without a signing deadline (started on a build before it) whose
   * record has not changed since `before`, by workflow id: what `npm run drain` cancels.
   */
  async unsignedWithoutDeadline(before: string): Promise<Map<string, ExecutionRecord>> {
    const rows = await this.database.db
      .selectFrom('executions')
      .select(['workflow_id', 'record'])
      .where('status', '=', 'OPERATION_PENDING')
      .where('updated_at', '<', before)
      .orderBy('updated_at')
      .execute();
    const found = new Map<string, ExecutionRecord>();
    for (const row of rows) {
      const record = JSON.parse(row.record) as ExecutionRecord;
      if (record.signingDeadline === undefined) found.set(row.workflow_id, record);
    }
    return found;
  }

  /**
   * The open executions (PREPARED, OPERATION_PENDING) whose row was last written between `after`
   * and `before`, oldest first, at most `limit`: those whose run may have moved on without its
   * caller writing it.
   */
  async openWrittenBetween(after: Date, before: Date, limit: number): Promise<Array<{ workflowId: string; status: ExecutionStatus }>> {
    const rows = await this.database.db
      .selectFrom('executions')
      .select(['workflow_id', 'status'])
      .where('status', 'in', [...OPEN_STATUSES])
      .where('projected_at', '>=', after.toISOString())
      .where('projected_at', '<', before.toISOString())
      .orderBy('projected_at')
      .limit(limit)
      .execute();
    return rows.map((r) => ({ workflowId: r.workflow_id, status: r.status as ExecutionStatus }));
  }

  /** The stored record of one execution, or undefined. */
  async get(wallet: string, executionId: string): Promise<ExecutionRecord | undefined> {
    const row = await this.database.db
      .selectFrom('executions')
      .select('record')
      .where('wallet', '=', wallet)
      .where('execution_id', '=', executionId)
      .executeTakeFirst();
    return row ? (JSON.parse(row.record) as ExecutionRecord) : undefined;
  }

  /**
   * One page of a wallet's executions, newest first (createdAt, then executionId, both
   * descending): keyset pagination, so rows written between two pages neither repeat nor skip
   * the rows that were already there.
   */
  async list(
    wallet: string,
    options: { statuses?: readonly ExecutionStatus[]; pageSize: number; after?: PagePosition },
  ): Promise<ExecutionPage> {
    let query = this.database.db.selectFrom('executions').select(['record', 'created_at', 'execution_id']).where('wallet', '=', wallet);
    if (options.statuses && options.statuses.length > 0) query = query.where('status', 'in', [...options.statuses]);
    const after = options.after;
    if (after) {
      query = query.where((eb) =>
        eb.or([
          eb('created_at', '<', after.createdAt),
          eb.and([eb('created_at', '=', after.createdAt), eb('execution_id', '<', after.executionId)]),
        ]),
      );
    }
    const rows = await query
      .orderBy('created_at', 'desc')
      .orderBy('execution_id', 'desc')
      .limit(options.pageSize + 1)
      .execute();
    const page = rows.slice(0, options.pageSize);
    const last = page[page.length - 1];
    return {
      records: page.map((r) => JSON.parse(r.record) as ExecutionRecord),
      next: rows.length > options.pageSize && last ? { createdAt: last.created_at, executionId: last.execution_id } : undefined,
    };
  }
}
