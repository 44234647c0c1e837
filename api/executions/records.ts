import { Client, QueryRejectedError, WorkflowFailedError, WorkflowNotFoundError, isGrpcServiceError } from '@temporalio/client';
import type { UpdateDefinition } from '@temporalio/common';
import { getExecutionQuery, executionWorkflowId } from '../../contracts/temporal';
import type { ExecutionStore } from '../../db/execution-store';
import { FINAL_STATUSES, callerWritesRecord, type ExecutionRecord } from '../../domain/execution-state';
import { fromReadModel } from '../http/read-model';
import { withinMs } from '../temporal/call';
import { mapTemporalError } from '../temporal/errors';

/** How long one Temporal call may take before the API answers 503 (outcome unknown) instead of hanging. */
const TEMPORAL_CALL_MS = 5_000;

/**
 * Where every execution use-case reads a record and writes the one it made: the workflow while it
 * is open (the source of truth), the read model once it has closed. Temporal calls are bounded
 * (TEMPORAL_CALL_MS); a read model that does not answer is a 503.
 */
export class ExecutionRecords {
  /** The service's client, except that a query of a closed execution is refused by the server (not replayed on a worker). */
  readonly client: Client;

  constructor(
    client: Client,
    private readonly store: ExecutionStore,
  ) {
    this.client = new Client({
      connection: client.connection,
      namespace: client.options.namespace,
      interceptors: client.options.interceptors,
      workflow: { queryRejectCondition: 'NOT_OPEN' },
    });
  }

  call<R>(fn: () => Promise<R>): Promise<R> {
    return withinMs(this.client, TEMPORAL_CALL_MS, fn);
  }

  /** A read-model read whose failure is a 503: the same request may be sent again once it is back. */
  readModel<R>(fn: () => Promise<R>): Promise<R> {
    return fromReadModel('the execution store', fn);
  }

  /** The read model's row of the execution (503 when it cannot be read). */
  stored(wallet: string, executionId: string): Promise<ExecutionRecord | undefined> {
    return this.readModel(() => this.store.get(wallet, executionId));
  }

  /** Sends an Update to the execution's workflow and waits for its answer. */
  update<R, A>(workflowId: string, update: UpdateDefinition<R, [A]>, arg: A): Promise<R> {
    return this.call(() => this.client.workflow.getHandle(workflowId).executeUpdate(update, { args: [arg] }));
  }

  /**
   * Writes a record this API's prepare or Update made (or was answered as already made) into the
   * read model before the client hears of it, unless the workflow writes it (callerWritesRecord):
   * a GET after the answer shows it, though the run may have closed already. The read model down is
   * 503; the change stays made, and a retry is answered as a duplicate and writes it then.
   */
  async written(workflowId: string, record: ExecutionRecord): Promise<ExecutionRecord> {
    if (callerWritesRecord(record)) await this.readModel(() => this.store.upsert(workflowId, record));
    return record;
  }

  /**
   * The record: from the workflow while it is open (the source of truth), from the read model once
   * it has closed (it closes only after the read model holds its final record) or after the
   * namespace's retention has removed it. A closed run is never replayed on a worker to answer.
   */
  async get(wallet: string, executionId: string): Promise<ExecutionRecord> {
    const workflowId = executionWorkflowId(wallet, executionId);
    try {
      return await this.call(() => this.client.workflow.getHandle(workflowId).query(getExecutionQuery));
    } catch (err) {
      if (isNotFound(err) || err instanceof QueryRejectedError) {
        const stored = await this.stored(wallet, executionId);
        if (stored && FINAL_STATUSES.includes(stored.status)) return stored;
        // Closed before its caller wrote the final record (the answer and the close are one
        // workflow task): the run's result is that record, read from its history.
        const final = err instanceof QueryRejectedError ? await this.closedRecord(workflowId) : undefined;
        if (final) return this.written(workflowId, final);
        if (stored) return stored;
      }
      throw mapTemporalError(err, `execution ${executionId}`);
    }
  }

  /**
   * Whether the read model's record of the execution satisfies `test`; false when it holds none or
   * cannot be read (the caller then goes to the workflow, which decides). Used only for facts that
   * never become false again once true (a stored signature, a final status), so a stale row can
   * only say too little.
   */
  async readModelSays(wallet: string, executionId: string, test: (record: ExecutionRecord) => boolean): Promise<boolean> {
    try {
      const stored = await this.store.get(wallet, executionId);
      return stored !== undefined && test(stored);
    } catch {
      return false;
    }
  }

  /** A closed run's final record (its result); undefined when it ended otherwise (terminated, failed). */
  private async closedRecord(workflowId: string): Promise<ExecutionRecord | undefined> {
    try {
      return await this.call(() => this.client.workflow.getHandle(workflowId).result() as Promise<ExecutionRecord>);
    } catch (err) {
      if (err instanceof WorkflowFailedError) return undefined;
      throw mapTemporalError(err, `execution ${workflowId}`);
    }
  }
}

/** Temporal has no such workflow (never started, or removed after the namespace's retention). */
export function isNotFound(err: unknown): boolean {
  return err instanceof WorkflowNotFoundError || (isGrpcServiceError(err) && err.code === 5);
}
