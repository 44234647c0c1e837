import { allHandlersFinished, condition, defineUpdate, setHandler, upsertMemo } from '@temporalio/workflow';
import { BATCH_OUTCOME_MEMO } from '../../domain/batch-outcome-memo';

// The bench's floor for a whitelist batch: a workflow that does nothing, started and answered the
// way the API starts a batch (update-with-start), so that "what one workflow costs on this server"
// is measured next to the batch itself.

export const emptyAnswerUpdate = defineUpdate<string>('emptyAnswer');

export async function emptyBatchWorkflow(): Promise<void> {
  setHandler(emptyAnswerUpdate, () => 'done');
  await condition(allHandlersFinished);
}

/**
 * The floor of an eagerly started batch (decision 0015): a workflow that does nothing but write the
 * outcome memo a batch writes, started with `requestEagerStart` and read from its history the way
 * the API reads a batch's outcome (api/batch-outcome-history.ts).
 */
export function emptyMemoWorkflow(): void {
  upsertMemo({ [BATCH_OUTCOME_MEMO]: { status: 200 } });
}
