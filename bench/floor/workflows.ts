import {
  allHandlersFinished,
  condition,
  defineUpdate,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type * as floorActivities from './activities';
import { executionStatusKey, submitSignatureUpdate } from '../../contracts/temporal';

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
 * asked: the empty workflow whose Update waits for one local activity that does
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

/** What the floor's Update does besides answering: nothing, or the parts of a status change's work. */
export type FloorWork = 'none' | 'search-attribute' | 'search-attribute+activity' | 'search-attribute+close';

const { settle: settleTask } = proxyActivities<typeof floorActivities>({ startToCloseTimeout: '10 s' });

/**
 * The floor of a submit: a workflow that answers the execution's own Update (`submitSignature`,
 * same arguments) with SIGNING. With `work` 'none' it does nothing else, so that its Update costs
 * the server one workflow task: the least any submit can cost on it. The other kinds add, one at
 * a time, what an execution's status change adds: the ExecutionState search attribute, then an
 * activity (a task of its own, whose completion is another workflow task), or closes the workflow in
 * the task that answers, as an execution does at SIGNING. The others stay open afterwards (a close is
 * work of its own); the bench terminates them.
 */
export async function emptySubmitWorkflow(work: FloorWork = 'none'): Promise<void> {
  let answered = false;
  setHandler(submitSignatureUpdate, () => {
    if (work !== 'none') upsertSearchAttributes([{ key: executionStatusKey, value: 'SIGNING' }]);
    if (work === 'search-attribute+activity') void settleTask();
    answered = true;
    return { status: 'SIGNING' as const };
  });
  await condition(() => work === 'search-attribute+close' && answered && allHandlersFinished());
}
