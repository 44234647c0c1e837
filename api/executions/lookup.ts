import { Ajv } from 'ajv';
import { executionWorkflowId } from '../../contracts/temporal';
import type { ExecutionStore } from '../../db/execution-store';
import type { ExecutionRecord } from '../../domain/execution-record';
import { fromReadModel } from '../http/read-model';
import { withReasons, type ChainProgress } from '../temporal/chain-progress';
import type { ExecutionAnswer } from './read';
import { executionIdParamSchema, walletParamSchema, type LookupRequest } from './request-schemas';

/** One item of a lookup's answer: the record, or why there is none. */
export type LookupItem = { record: ExecutionAnswer } | { error: string; code: 'NOT_FOUND' | 'INVALID' };

const ajv = new Ajv({ strict: true });
const validWallet = ajv.compile(walletParamSchema);
const validExecutionId = ajv.compile(executionIdParamSchema);

/**
 * The records of a batch, in the order asked: one read of the read model for all of them (the list
 * route's source, written after every change), each with its status reason. An item that is no
 * valid wallet and execution id, or that the read model holds no record of, is answered with its
 * own error; the batch stands.
 */
export async function lookupExecutions(store: ExecutionStore, progress: ChainProgress, request: LookupRequest): Promise<LookupItem[]> {
  const ids = request.executions.map(({ wallet, executionId }) =>
    validWallet(wallet) && validExecutionId(executionId) ? executionWorkflowId(wallet, executionId) : undefined,
  );
  const wanted = [...new Set(ids.filter((id): id is string => id !== undefined))];
  const found: Map<string, ExecutionRecord> = await fromReadModel('the execution store', () => store.getMany(wanted));
  const reasoned = new Map(
    (await withReasons(progress, [...found.values()])).map((r) => [executionWorkflowId(r.wallet, r.executionId), r]),
  );
  return request.executions.map(({ wallet, executionId }, i): LookupItem => {
    const id = ids[i];
    if (id === undefined)
      return {
        error: validWallet(wallet)
          ? `executionId ${JSON.stringify(executionId)} is not an execution id`
          : `wallet ${JSON.stringify(wallet)} is not a wallet`,
        code: 'INVALID',
      };
    const record = reasoned.get(id);
    return record ? { record } : { error: `no execution ${executionId} for this wallet`, code: 'NOT_FOUND' };
  });
}
