import type { Client } from '@temporalio/client';
import type { ApiConfig } from '../../config/config';
import type { ExecutionStore } from '../../db/execution-store';
import type { RefundLedger } from '../../db/refund-ledger';
import type { Deposit, ExecutionRecord, ExecutionStatus } from '../../domain/execution-state';
import type { DepositDeps } from '../deps';
import { CancelExecutions } from './cancel';
import { Capacity } from './capacity';
import { ReportDeposits } from './deposit';
import { PrepareExecutions } from './prepare';
import { ReadExecutions, type ExecutionAnswer, type ExecutionList, type ListRequest } from './read';
import { ExecutionRecords } from './records';
import { ChainProgress, watcherQuery } from '../temporal/chain-progress';
import type { CancelRequest, PrepareRequest, RefundAddressRequest, SubmitRequest } from './request-schemas';
import { noLimit, type WalletBudget } from './run-command';
import { SignedRequests } from './signed-requests';
import { SubmitSignatures } from './submit';
import { SetRefundAddresses, type OwnerRefundAnswer } from './refund-address';

export type { ExecutionAnswer, ExecutionList, ListRequest, WalletBudget };

/**
 * The execution use-cases of the HTTP API, one module each: prepare.ts, submit.ts, cancel.ts,
 * deposit.ts and read.ts. Signatures are verified here, before anything reaches the workflow
 * (signed-requests.ts); every command that may change an execution goes through runCommand
 * (run-command.ts), and how each is refused is contracts/execution-commands.ts.
 *
 * Retries and replays write nothing (docs/decisions/0020-replays-write-nothing.md): a submit or
 * deposit the workflow already holds is rejected by its Update validator as a duplicate, which
 * leaves no history event, and answered as a success. A signature this process has already seen
 * accepted, or the read model shows, and a deposit the record holds are answered from a query
 * instead of an Update, so a flood of replays uses neither the workflow's Update budget nor its
 * few in-flight Update slots.
 */
export class ExecutionService {
  private readonly records: ExecutionRecords;
  private readonly preparing: PrepareExecutions;
  private readonly reading: ReadExecutions;
  private readonly submitting: SubmitSignatures;
  private readonly cancelling: CancelExecutions;
  private readonly depositing: ReportDeposits;
  private readonly redirecting: SetRefundAddresses;
  /** What the chain watcher says of deposits short of their confirmations (status reasons, the status pages). */
  readonly progress: ChainProgress;

  constructor(
    client: Client,
    config: ApiConfig,
    store: ExecutionStore,
    refunds: RefundLedger,
    clock: () => number = Date.now,
    deposits?: DepositDeps,
  ) {
    this.records = new ExecutionRecords(client, store);
    const signed = new SignedRequests(this.records, config, clock);
    const capacity = new Capacity(this.records.client, config, store, clock);
    this.preparing = new PrepareExecutions(this.records, signed, capacity, config, clock, deposits);
    this.progress = new ChainProgress(watcherQuery(this.records.client), deposits);
    this.reading = new ReadExecutions(this.records, store, refunds, this.progress, deposits?.owners);
    this.submitting = new SubmitSignatures(this.records, signed, clock);
    this.cancelling = new CancelExecutions(this.records, signed);
    this.depositing = new ReportDeposits(this.records, config, refunds, clock, deposits);
    this.redirecting = new SetRefundAddresses(this.records, signed, deposits, deposits?.owners);
  }

  /** Starts the execution's workflow; the same prepare again answers the existing record (`replayed`). */
  prepare(wallet: string, body: PrepareRequest): Promise<{ record: ExecutionRecord; replayed: boolean }> {
    return this.preparing.prepare(wallet, body);
  }

  /** The record: from the workflow while it is open, from the read model once it has closed. */
  get(wallet: string, executionId: string): Promise<ExecutionRecord> {
    return this.records.get(wallet, executionId);
  }

  /** The record with its refunds summary and its first rows (read-model reads: throws when it is down). */
  answer(record: ExecutionRecord): Promise<ExecutionAnswer> {
    return this.reading.answer(record);
  }

  /** The record with its status reason only (what a GET answers while the read model is down). */
  reasoned(record: ExecutionRecord): Promise<ExecutionAnswer> {
    return this.reading.reasoned(record);
  }

  /** One page of the wallet's executions from the read model, newest first. */
  list(wallet: string, request: ListRequest): Promise<ExecutionList> {
    return this.reading.list(wallet, request);
  }

  /** Stores the wallet's signature; the status it left. */
  submit(wallet: string, body: SubmitRequest, budget: WalletBudget = noLimit): Promise<ExecutionStatus> {
    return this.submitting.submit(wallet, body, budget);
  }

  /** Cancels on the wallet's signature; the record. */
  cancel(wallet: string, executionId: string, body: CancelRequest, budget: WalletBudget = noLimit): Promise<ExecutionRecord> {
    return this.cancelling.cancel(wallet, executionId, body, budget);
  }

  /** Sets where refunds of the execution's own deposit and of its payer's transfers go, on the wallet's signature. */
  setRefundAddress(
    wallet: string,
    executionId: string,
    body: RefundAddressRequest,
    budget: WalletBudget = noLimit,
  ): Promise<OwnerRefundAnswer> {
    return this.redirecting.set(wallet, executionId, body, budget);
  }

  /** Records a reported deposit; the record. */
  deposit(wallet: string, executionId: string, reported: Deposit): Promise<ExecutionRecord> {
    return this.depositing.deposit(wallet, executionId, reported);
  }
}
