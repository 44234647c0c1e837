import { allHandlersFinished, condition, defineUpdate, setHandler } from '@temporalio/workflow';

// The bench's floor for a whitelist batch: a workflow that does nothing, started and answered the
// way the API starts a batch (update-with-start), so that "what one workflow costs on this server"
// is measured next to the batch itself.

export const emptyAnswerUpdate = defineUpdate<string>('emptyAnswer');

export async function emptyBatchWorkflow(): Promise<void> {
  setHandler(emptyAnswerUpdate, () => 'done');
  await condition(allHandlersFinished);
}
