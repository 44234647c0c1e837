import { startFollowingStack as startStackFollowing } from '../../scripts/lib/deposit-helpers';
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
