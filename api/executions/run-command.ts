import type { UpdateDefinition } from '@temporalio/common';
import { refusalOf, refusalOfFailure, type Refusal, type Refusals } from '../../contracts/execution-commands';
import { ExecutionFailure, executionWorkflowId } from '../../contracts/temporal';
import { ServiceError } from '../../domain/errors';
import type { ExecutionRecord } from '../../domain/execution-state';
import { mapTemporalError, updateFailureType } from '../temporal/errors';
import { isNotFound, type ExecutionRecords } from './records';

/**
 * A wallet's budget of signed actions (its rate limit). `verified` is told once the signature
 * verified; `spend` throws (429) to refuse an action that may change something; `giveBack` returns
 * what an action spent when it turned out to change nothing.
 */
export interface WalletBudget {
  verified(): void;
  spend(): Promise<void>;
  giveBack(): Promise<void>;
}
export const noLimit: WalletBudget = { verified: () => undefined, spend: () => Promise.resolve(), giveBack: () => Promise.resolve() };

/** The HTTP answer of a refusal (contracts/execution-commands.ts). */
export const refused = (refusal: Refusal): ServiceError => new ServiceError(refusal.status, refusal.code, refusal.message);

/**
 * A command judged on a record by its check's `outcome`: `duplicate` is answered with `answer` (a
 * success: nothing to do), a refusal of `refusals` throws its HTTP answer, anything else (`ok`) is
 * undefined: the command may change the execution.
 */
export function judged<R>(refusals: Refusals, outcome: string, answer: R): R | undefined {
  if (outcome === 'duplicate') return answer;
  const refusal = refusalOf(refusals, outcome);
  if (refusal) throw refused(refusal);
  return undefined;
}

/** One command to an execution's workflow: its Update, and how its answers are told. */
export interface Command<R, A> {
  wallet: string;
  executionId: string;
  update: UpdateDefinition<R, [A]>;
  arg: A;
  /** How the workflow refuses it (the failure types its validator throws). */
  refusals: Refusals;
  /** The record an answer carries: the API writes it into the read model (callerWritesRecord). */
  recordOf(answer: R): ExecutionRecord | undefined;
  /**
   * The command judged on the final record of a workflow that has closed (or is gone), as the open
   * workflow would have judged it: the answer to a duplicate, a refusal thrown, or undefined when
   * the record would have taken it (the run ended otherwise: the Temporal error is answered).
   */
  closed(record: ExecutionRecord): R | undefined | Promise<R | undefined>;
}

/**
 * Sends a command that may change the execution: spends the wallet's budget, sends the Update and
 * writes the record it answers into the read model before the client hears of it. What changed
 * nothing gives the budget back: a duplicate (the workflow held it already; the read model lagged)
 * is answered as a success from the validator's answer, a refusal with its HTTP answer, and a
 * workflow that has closed is answered from its final record (`closed`), which is final, so
 * nothing is written then.
 */
export async function runCommand<R, A>(records: ExecutionRecords, budget: WalletBudget, command: Command<R, A>): Promise<R> {
  const what = `execution ${command.executionId}`;
  const workflowId = executionWorkflowId(command.wallet, command.executionId);
  await budget.spend();
  let answer: R;
  try {
    answer = await records.update(workflowId, command.update, command.arg);
  } catch (err) {
    const failure = updateFailureType(err);
    const duplicate = failure?.type === ExecutionFailure.duplicate;
    const refusal = failure && refusalOfFailure(command.refusals, failure);
    const gone = isNotFound(err);
    if (duplicate || refusal || gone) await budget.giveBack();
    if (refusal) throw refused(refusal);
    if (gone) {
      const verdict = await command.closed(await records.get(command.wallet, command.executionId));
      if (verdict !== undefined) return verdict;
    }
    if (!duplicate) throw mapTemporalError(err, what);
    answer = failure.detail as R;
  }
  const record = command.recordOf(answer);
  if (record) await records.written(workflowId, record);
  return answer;
}
