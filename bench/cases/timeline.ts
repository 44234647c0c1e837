import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { whitelistBatchWorkflowId } from '../../contracts/temporal';
import { round } from '../stats';

// Where a whitelist batch's time goes, read from its Temporal history. The span from the
// workflow's start to its batchOutcome update completing is split into time when a workflow task
// was running (worker code plus its completion call), time when only activities were running
// (precheck, storage node calls), and the rest: the Temporal server queueing and persisting. What
// the HTTP answer took beyond that span is the API, the client call and HTTP.

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

export interface Timeline {
  batches: number;
  httpMs: number;
  /** HTTP latency minus the workflow span: Koa, auth, validation, the gRPC call, HTTP. */
  apiMs: number;
  serverMs: number;
  workflowTaskMs: number;
  activityMs: number;
  workflowTasks: number;
}

const ms = (e: HistoryEvent) => Number(e.eventTime?.seconds ?? 0) * 1000 + (e.eventTime?.nanos ?? 0) / 1e6;

/** Length of the union of intervals, clipped to [from, to]. */
function covered(intervals: Array<[number, number]>, from: number, to: number): number {
  let total = 0;
  let end = from;
  for (const [a, b] of intervals.map(([a, b]) => [Math.max(a, from), Math.min(b, to)] as [number, number]).sort((x, y) => x[0] - y[0])) {
    if (b <= end) continue;
    total += b - Math.max(a, end);
    end = b;
  }
  return total;
}

function intervals(
  events: HistoryEvent[],
  started: keyof HistoryEvent,
  closedBy: Array<keyof HistoryEvent>,
  scheduledIdOf: (e: HistoryEvent) => unknown,
): Array<[number, number]> {
  const startedAt = new Map<string, number>();
  const out: Array<[number, number]> = [];
  for (const e of events) {
    if (e[started]) startedAt.set(String((e[started] as { scheduledEventId?: unknown }).scheduledEventId), ms(e));
    for (const key of closedBy) {
      if (!e[key]) continue;
      const begin = startedAt.get(String(scheduledIdOf(e)));
      if (begin !== undefined) out.push([begin, ms(e)]);
    }
  }
  return out;
}

/** The split of one batch's history; undefined when the history has no completed outcome update. */
function split(events: HistoryEvent[], httpMs: number): Omit<Timeline, 'batches'> | undefined {
  const start = ms(events[0]);
  const outcome = events.find((e) => e.workflowExecutionUpdateCompletedEventAttributes);
  if (!outcome) return undefined;
  const end = ms(outcome);
  const wft = intervals(
    events,
    'workflowTaskStartedEventAttributes',
    ['workflowTaskCompletedEventAttributes', 'workflowTaskFailedEventAttributes', 'workflowTaskTimedOutEventAttributes'],
    (e) =>
      (e.workflowTaskCompletedEventAttributes ?? e.workflowTaskFailedEventAttributes ?? e.workflowTaskTimedOutEventAttributes)
        ?.scheduledEventId,
  );
  const act = intervals(
    events,
    'activityTaskStartedEventAttributes',
    ['activityTaskCompletedEventAttributes', 'activityTaskFailedEventAttributes', 'activityTaskTimedOutEventAttributes'],
    (e) =>
      (e.activityTaskCompletedEventAttributes ?? e.activityTaskFailedEventAttributes ?? e.activityTaskTimedOutEventAttributes)
        ?.scheduledEventId,
  );
  const workflowTaskMs = covered(wft, start, end);
  const both = covered([...wft, ...act], start, end);
  return {
    httpMs,
    apiMs: httpMs - (end - start),
    serverMs: end - start - both,
    workflowTaskMs,
    activityMs: both - workflowTaskMs,
    workflowTasks: wft.filter(([a]) => a <= end).length,
  };
}

/** Mean split over the given batches (batchId and its HTTP latency). */
export function batchTimeline(client: Client, batches: Array<{ batchId: string; httpMs: number }>): Promise<Timeline> {
  return timelineOf(
    client,
    batches.map(({ batchId, httpMs }) => ({ workflowId: whitelistBatchWorkflowId(batchId), latencyMs: httpMs })),
  );
}

/**
 * The same split for the floor's empty workflows, started by update-with-start from the bench's
 * client: `httpMs` is then the client call's latency and `apiMs` what it took outside the workflow
 * (the gRPC call and the bench's client), so that each part of a batch has its floor beside it.
 */
export function floorTimeline(client: Client, runs: Array<{ workflowId: string; clientMs: number }>): Promise<Timeline> {
  return timelineOf(
    client,
    runs.map(({ workflowId, clientMs }) => ({ workflowId, latencyMs: clientMs })),
  );
}

async function timelineOf(client: Client, runs: Array<{ workflowId: string; latencyMs: number }>): Promise<Timeline> {
  const splits: Array<Omit<Timeline, 'batches'>> = [];
  for (const { workflowId, latencyMs } of runs) {
    const history = await client.workflow.getHandle(workflowId).fetchHistory();
    const s = split(history.events ?? [], latencyMs);
    if (s) splits.push(s);
  }
  const mean = (key: keyof Omit<Timeline, 'batches'>) => round(splits.reduce((a, s) => a + s[key], 0) / Math.max(1, splits.length), 1);
  return {
    batches: splits.length,
    httpMs: mean('httpMs'),
    apiMs: mean('apiMs'),
    serverMs: mean('serverMs'),
    workflowTaskMs: mean('workflowTaskMs'),
    activityMs: mean('activityMs'),
    workflowTasks: mean('workflowTasks'),
  };
}
