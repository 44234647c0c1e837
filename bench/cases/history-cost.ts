import type { Client } from '@temporalio/client';

// What one execution costs the Temporal server, read from its history: events, workflow tasks,
// activity tasks and local-activity markers from prepare to SIGNING (the bench's executions are
// prepared, deposited and submitted through the API).

export interface HistoryCost {
  events: number;
  workflowTasks: number;
  activityTasks: number;
  markers: number;
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
