import { allHandlersFinished, condition, defineUpdate, proxyLocalActivities, setHandler } from '@temporalio/workflow';
import type * as floorActivities from './activities';
import { submitSignatureUpdate } from '../../contracts/temporal';

// The bench's floor for a whitelist batch: a workflow that does nothing, started and answered the
// way the API starts a batch (update-with-start), so that "what one workflow costs on this server"
// is measured next to the batch itself.

export const emptyAnswerUpdate = defineUpdate<string>('emptyAnswer');

export async function emptyBatchWorkflow(): Promise<void> {
  setHandler(emptyAnswerUpdate, () => 'done');
  await condition(allHandlersFinished);
}

const { settle } = proxyLocalActivities<typeof floorActivities>({ startToCloseTimeout: '10 s' });

/**
 * The least a batch can be while it re-checks its token inside the workflow before any node is
 * asked (issue 17): the empty workflow whose Update waits for one local activity that does
 * nothing, as a batch's Update waits for its precheck-and-first-round local activity. Against
 * `emptyBatchWorkflow` it measures one local-activity round: the activity's dispatch and the
 * second activation that takes its result.
 */
export async function oneLocalActivityWorkflow(): Promise<void> {
  let answer: string | undefined = undefined;
  setHandler(emptyAnswerUpdate, async () => {
    await condition(() => answer !== undefined);
    return answer ?? 'done';
  });
  answer = await settle();
  await condition(allHandlersFinished);
}

/**
 * The floor of a submit: a workflow that answers the execution's own Update (`submitSignature`,
 * same arguments) with SIGNING and does nothing else, then closes. Its Update costs the server one
 * workflow task: the least any submit can cost on it.
 */
export async function emptySubmitWorkflow(): Promise<void> {
  let answered = false;
  setHandler(submitSignatureUpdate, () => {
    answered = true;
    return { status: 'SIGNING' as const };
  });
  await condition(() => answered && allHandlersFinished());
}
