import path from 'node:path';
import { executionWorkflowId } from '../../contracts/temporal';
import { openDatabase } from '../../db/database';
import { RefundLedger, type RefundRow } from '../../db/refund-ledger';
import { startFollowingStack as startStackFollowing, type PreparedDeposit } from '../../scripts/lib/deposit-helpers';
import type { TestChain } from '../../scripts/lib/test-chain';
import { ProcessStack } from './process-stack';

export { depositHelpers, type PreparedDeposit, type PrepareDepositOptions } from '../../scripts/lib/deposit-helpers';

/** The tests' process stack (test keys, nodes with faults), following `chain` (scripts/lib/deposit-helpers.ts). */
export function startFollowingStack(
  chain: TestChain,
  chainId: string,
  confirmations: number,
  env: Record<string, string> = {},
): Promise<ProcessStack> {
  return startStackFollowing(chain, chainId, confirmations, env, (options) => new ProcessStack(options));
}

/** The refunds ledger's rows of a prepared execution, read from the stack's read model. */
export async function refundsOf(stack: ProcessStack, e: PreparedDeposit): Promise<RefundRow[]> {
  const database = await openDatabase({ sqliteFile: path.join(stack.tmpDir, 'read-model.sqlite') });
  try {
    return await new RefundLedger(database).ofExecution(executionWorkflowId(e.wallet.id, e.executionId));
  } finally {
    await database.close();
  }
}
