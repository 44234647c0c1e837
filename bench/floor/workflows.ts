import { allHandlersFinished, condition, defineUpdate, setHandler } from '@temporalio/workflow';

// The bench's floor for a whitelist batch: a workflow that does nothing, started and answered the
// way the API starts a batch (update-with-start), so that "what one workflow costs on this server"
// is measured next to the batch itself.

export const emptyAnswerUpdate = defineUpdate<string>('emptyAnswer');

export async function emptyBatchWorkflow(): Promise<void> {
  setHandler(emptyAnswerUpdate, () => 'done');
  await condition(allHandlersFinished);
}

/**
 * The floor of an eagerly started batch (decision 0015): the same empty workflow, started with
 * `requestEagerStart` and asked for its answer by the Update afterwards, so it stays open for the
 * Update as the batch does (until `waitMs`).
 */
export async function emptyEagerWorkflow(waitMs: number): Promise<void> {
  let asked = false;
  setHandler(emptyAnswerUpdate, () => {
    asked = true;
    return 'done';
  });
  await condition(() => asked, waitMs);
  await condition(allHandlersFinished);
}
