import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { BATCH_OUTCOME_MEMO, type BatchOutcomeMemo } from '../domain/batch-outcome-memo';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

const STATUSES = new Set([200, 403, 408, 500]);

/** The payload of the outcome memo when `event` is the one that stored it (decision 0015), else undefined. */
export function outcomeMemoPayload(event: HistoryEvent): temporal.api.common.v1.IPayload | undefined {
  return event.workflowPropertiesModifiedEventAttributes?.upsertedMemo?.fields?.[BATCH_OUTCOME_MEMO] ?? undefined;
}

/** True for the event that closes a workflow run, whatever way it closed. */
function closes(e: HistoryEvent): boolean {
  return Boolean(
    e.workflowExecutionCompletedEventAttributes ??
    e.workflowExecutionFailedEventAttributes ??
    e.workflowExecutionTimedOutEventAttributes ??
    e.workflowExecutionTerminatedEventAttributes ??
    e.workflowExecutionCanceledEventAttributes ??
    e.workflowExecutionContinuedAsNewEventAttributes,
  );
}

/**
 * Waits for an eagerly started batch's outcome (decision 0015): long-polls the run's history
 * (`waitNewEvent`, as `handle.result()` does for the close event) until the event that stored the
 * memo `batchOutcome`, which the workflow writes with the workflow task that decides it. The
 * server answers with events only once they are stored, so the outcome is durable when this
 * resolves. Throws if the run closes without one (a workflow failure or a termination). Bounded by
 * the caller's deadline (`withinMs`), as every Temporal call of the API is.
 */
export async function awaitBatchOutcomeMemo(client: Client, workflowId: string, runId: string): Promise<BatchOutcomeMemo> {
  const { namespace, loadedDataConverter } = client.options;
  let nextPageToken: Uint8Array | undefined;
  for (;;) {
    const answer = await client.workflowService.getWorkflowExecutionHistory({
      namespace,
      execution: { workflowId, runId },
      waitNewEvent: true,
      historyEventFilterType: temporal.api.enums.v1.HistoryEventFilterType.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT,
      skipArchival: true,
      nextPageToken,
    });
    for (const event of answer.history?.events ?? []) {
      const payload = outcomeMemoPayload(event);
      if (payload) {
        const memo = loadedDataConverter.payloadConverter.fromPayload<BatchOutcomeMemo>(payload);
        if (!STATUSES.has(memo?.status)) throw new Error(`batch workflow ${workflowId} wrote an outcome memo without a known status`);
        return memo;
      }
      if (closes(event)) throw new Error(`batch workflow ${workflowId} closed without an outcome`);
    }
    nextPageToken = answer.nextPageToken?.length ? answer.nextPageToken : undefined;
  }
}
