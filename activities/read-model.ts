import { ApplicationFailure, Context } from '@temporalio/activity';
import type { ExecutionActivities } from '../contracts/activities';
import type { ExecutionStore } from '../db/execution-store';
import type { RefundDue, RefundLedger } from '../db/refund-ledger';
import { refundId, refundsOfRecord } from '../db/refund-rows';
import type { DepositAsset, ExecutionRecord, RefusedDeposit } from '../domain/execution-state';
import { payerLookup } from '../lib/chain-transaction';

export interface ReadModelDeps {
  /** The read model; absent in workflow tests that run without one. */
  executions?: ExecutionStore;
  /** The refunds ledger in the read model: every deposit an execution refused is owed back there. */
  refunds?: RefundLedger;
  /** The chain the worker watches, where a new ledger row's sender is read; absent when no CHAIN_RPC_URL is configured. */
  chain?: { rpcUrl: string };
}

/**
 * The execution workflow's read-model write (the activity type `projectExecution`, a Temporal name
 * kept as it is): its record into the read model, after the refunds ledger rows it owes.
 */
export function createReadModelActivities(deps: ReadModelDeps): Pick<ExecutionActivities, 'projectExecution'> {
  const payer = deps.chain && payerLookup(deps.chain.rpcUrl);
  /**
   * A new ledger row of an on-chain transfer with its sender: the payer of that transfer (txHash,
   * transferIndex, asset) and whether it has code, read from the chain the worker watches. Best
   * effort: a node that does not answer leaves the row without one (logged), so a chain outage
   * never holds up an execution's read-model write.
   */
  const withSender = async (due: RefundDue): Promise<RefundDue> => {
    if (!payer || due.chain === undefined || due.sender !== undefined) return due;
    try {
      const found = await payer(due.chain, due.txHash, due.transferIndex ?? 0, (due.asset ?? 'native') as DepositAsset);
      return found === undefined ? due : { ...due, ...found };
    } catch (err) {
      Context.current().log.warn("refund's sender left unknown: the chain's node did not answer", {
        workflowId: due.workflowId,
        txHash: due.txHash,
        error: (err as Error).message,
      });
      return due;
    }
  };

  return {
    /**
     * Writes an execution's record to the read model (idempotent: a row of the same or a newer
     * version is kept). A database error throws, and the workflow's retry policy tries again.
     */
    async projectExecution(input: { workflowId: string; record: ExecutionRecord; overflow?: RefusedDeposit[] }): Promise<void> {
      if (!deps.executions)
        throw ApplicationFailure.create({ type: 'ReadModelMissing', message: 'this worker has no read model', nonRetryable: false });
      // The ledger first: a record the read model shows has its refunds owed already.
      const owed = refundsOfRecord(input.workflowId, input.record, input.overflow ?? []);
      if (owed.length > 0) {
        if (!deps.refunds)
          throw ApplicationFailure.create({ type: 'ReadModelMissing', message: 'this worker has no refunds ledger', nonRetryable: false });
        const known = await deps.refunds.existing(owed.map(refundId));
        for (const due of owed) await deps.refunds.recordDue(known.has(refundId(due)) ? due : await withSender(due));
      }
      await deps.executions.upsert(input.workflowId, input.record);
    },
  };
}
