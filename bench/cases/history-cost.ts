import type { Client } from '@temporalio/client';

// What one execution costs the Temporal server, read from its history: events, workflow tasks,
// activity tasks and local-activity markers from prepare to SIGNING (the bench's executions are
// prepared, deposited and submitted through the API).

export interface HistoryCost {
  events: number;
  workflowTasks: number;
  activityTasks: number;
  markers: number;
  /**
   * Temporal Cloud's billable actions the history shows (docs.temporal.io "Temporal Cloud Actions"):
   * the start, each timer started, each search-attribute upsert (those given at start are free),
   * each activity scheduled and each retry, one per workflow task that recorded local-activity
   * markers, each Update accepted, each signal, two per child workflow started. Queries and
   * rejected Updates are billed too but never reach a history: the bench's path sends none.
   */
  actions: number;
}

type HistoryEvent = NonNullable<Awaited<ReturnType<ReturnType<Client['workflow']['getHandle']>['fetchHistory']>>['events']>[number];

function billableActions(events: readonly HistoryEvent[]): number {
  let actions = 0;
  const markerTasks = new Set<string>();
  for (const e of events) {
    if (e.workflowExecutionStartedEventAttributes) actions++;
    if (e.timerStartedEventAttributes) actions++;
    if (e.upsertWorkflowSearchAttributesEventAttributes) actions++;
    if (e.activityTaskScheduledEventAttributes) actions++;
    if (e.activityTaskStartedEventAttributes) actions += Math.max(0, (e.activityTaskStartedEventAttributes.attempt ?? 1) - 1);
    if (e.workflowExecutionUpdateAcceptedEventAttributes) actions++;
    if (e.workflowExecutionSignaledEventAttributes) actions++;
    if (e.startChildWorkflowExecutionInitiatedEventAttributes) actions += 2;
    if (e.markerRecordedEventAttributes) markerTasks.add(String(e.markerRecordedEventAttributes.workflowTaskCompletedEventId));
  }
  return actions + markerTasks.size;
}

/** The cost of the history of `workflowId` so far. */
export async function historyCost(client: Client, workflowId: string): Promise<HistoryCost> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const events = history.events ?? [];
  return {
    events: events.length,
    workflowTasks: events.filter((e) => e.workflowTaskScheduledEventAttributes).length,
    activityTasks: events.filter((e) => e.activityTaskScheduledEventAttributes).length,
    markers: events.filter((e) => e.markerRecordedEventAttributes).length,
    actions: billableActions(events),
  };
}

/**
 * Waits until the execution's history stops growing (its projections and any webhook have
 * completed; the linger timer keeps it open), then returns its cost.
 */
export async function settledHistoryCost(client: Client, workflowId: string, quietMs = 1500, limitMs = 20_000): Promise<HistoryCost> {
  const deadline = Date.now() + limitMs;
  let last = await historyCost(client, workflowId);
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, quietMs));
    const now = await historyCost(client, workflowId);
    if (now.events === last.events || Date.now() > deadline) return now;
    last = now;
  }
}
