import { refundsUrl } from '../../contracts/refunds';
import { executionWorkflowId } from '../../contracts/temporal';
import type { ExecutionStore } from '../../db/execution-store';
import { decodePageToken, encodePageToken } from '../../db/page-token';
import type { RefundLedger } from '../../db/refund-ledger';
import { badRequest } from '../../domain/errors';
import type { ExecutionRecord, ExecutionStatus } from '../../domain/execution-state';
import type { ExecutionRecords } from './records';
import { withReasons, type ChainProgress } from '../temporal/chain-progress';
import type { StatusReason } from '../../domain/status-reason';
import type { OwnerRefundAddresses } from '../../db/owner-refund-address';
import { answerOf, type OwnerRefundAnswer } from './refund-address';
import { RECORD_REFUND_ROWS, refundSummary, type RefundSummary } from './refund-summary';

export interface ListRequest {
  statuses?: ExecutionStatus[];
  pageSize: number;
  pageToken?: string;
}

/**
 * A record as the read routes answer it: with the execution's row count in the refunds ledger
 * (every deposit it did not take, the ones past the record's first refusals included) and the
 * ledger query that lists them. Absent from a GET when the read model cannot be read.
 */
export type ExecutionAnswer = ExecutionRecord & {
  statusReason?: StatusReason;
  /** The refund address the owner set by a signed command, on GET of one execution. */
  ownerRefundAddress?: OwnerRefundAnswer;
  refunds?: { total: number; url: string; rows?: RefundSummary[] };
};

export interface ExecutionList {
  result: ExecutionAnswer[];
  nextPageToken?: string;
}

/** The read routes' answers beyond the record itself (ExecutionRecords.get): its refunds, and a wallet's list. */
export class ReadExecutions {
  constructor(
    private readonly records: ExecutionRecords,
    private readonly store: ExecutionStore,
    private readonly refunds: RefundLedger,
    private readonly progress: ChainProgress,
    private readonly owners?: OwnerRefundAddresses,
  ) {}

  /** The record with its status reason (the chain watcher asked whether its deposit is confirming). */
  async reasoned(record: ExecutionRecord): Promise<ExecutionAnswer> {
    const [answer] = await withReasons(this.progress, [record]);
    return answer!;
  }

  /** The record with its status reason, its refunds summary and its first rows (read-model reads: throws when it is down). */
  async answer(record: ExecutionRecord): Promise<ExecutionAnswer> {
    const [answer] = await this.withRefunds([await this.reasoned(record)]);
    const rows = await this.refunds.ofExecution(executionWorkflowId(record.wallet, record.executionId), RECORD_REFUND_ROWS);
    const target = record.depositTarget;
    const owner = target && this.owners ? await this.owners.of(target.chain, target.address) : undefined;
    return {
      ...answer!,
      ...(owner ? { ownerRefundAddress: answerOf(owner) } : {}),
      refunds: { ...answer!.refunds!, rows: rows.map(refundSummary) },
    };
  }

  /** One page of the wallet's executions from the read model, newest first. */
  async list(wallet: string, request: ListRequest): Promise<ExecutionList> {
    const after = request.pageToken === undefined ? undefined : decodePageToken(request.pageToken);
    if (request.pageToken !== undefined && !after) throw badRequest('pageToken is not a token this API issued');
    const page = await this.records.readModel(() =>
      this.store.list(wallet, { statuses: request.statuses, pageSize: request.pageSize, after }),
    );
    const result = await this.records.readModel(async () => this.withRefunds(await withReasons(this.progress, page.records)));
    return page.next ? { result, nextPageToken: encodePageToken(page.next) } : { result };
  }

  /** Each record with its row count in the refunds ledger and the query that lists those rows: one read for all. */
  private async withRefunds(records: readonly ExecutionAnswer[]): Promise<ExecutionAnswer[]> {
    const ids = records.map((r) => executionWorkflowId(r.wallet, r.executionId));
    const counts = await this.refunds.countsOf(ids);
    return records.map((r, i) => ({
      ...r,
      refunds: {
        // The record's own refusals count even before the workflow's read-model write has put them in the ledger.
        total: Math.max(counts.get(ids[i]!) ?? 0, r.refusedDeposits.length + (r.deposit?.refundDue ? 1 : 0)),
        url: refundsUrl(r.wallet, r.executionId),
      },
    }));
  }
}
