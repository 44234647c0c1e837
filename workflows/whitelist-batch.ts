import {
  ActivityFailure,
  allHandlersFinished,
  condition,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  upsertMemo,
  workflowInfo,
} from '@temporalio/workflow';
import type { createActivities } from '../activities';
import { BATCH_OUTCOME_MEMO, batchOutcomeMemo, type BatchOutcomeMemo } from '../domain/batch-outcome-memo';
import { failureFacts } from '../domain/failure-facts';
import { groupByGivenOwners, groupByOwner, type OwnerGroups } from '../domain/rendezvous';
import { confirmationOfChecksummed, ownerKey, type WhitelistChange } from '../domain/whitelist-messages';
import { inverseChanges, type NodeResult } from '../domain/whitelist-batch-plan';
import {
  NodeFailure,
  batchOutcomeUpdate,
  mayHaveApplied,
  isRetryableNodeFailure,
  type QuickApplyResult,
  type FirstRoundResult,
  batchProgressQuery,
  type NodeProgress,
  type WhitelistBatchInput,
  type WhitelistBatchResult,
  type WhitelistBatchSummary,
  type WhitelistBatchOutcome,
  type BatchChangeView,
} from './definitions';

type Activities = ReturnType<typeof createActivities>;

// Retries are driven by this workflow, not by Temporal's retry policy, because what a failure means
// depends on the phase: before the HTTP answer a node gets a few quick tries; after it, a late node
// is retried until it applies, so that no accepted change is lost.
function remoteActivities(taskQueue: string | undefined) {
  const on = taskQueue === undefined ? {} : { taskQueue };
  const { authorizeBatch } = proxyActivities<Activities>({
    ...on,
    startToCloseTimeout: '10 seconds',
    retry: { maximumAttempts: 5, initialInterval: '100 ms', nonRetryableErrorTypes: [NodeFailure.forbidden] },
  });
  const { applyToNode } = proxyActivities<Activities>({
    ...on,
    startToCloseTimeout: '15 seconds',
    retry: { maximumAttempts: 1 },
  });
  /**
   * After the HTTP answer (a late node after a 408, a revert after a 500): one activity whose
   * retries are Temporal's, server side, until the node answers. A retry attempt writes no history
   * event, so a node down for days leaves the batch's history as it was (three events for the
   * activity in all), where a workflow-driven loop added an activity and a timer per attempt and would
   * have reached Temporal's 51,200-event limit after about 39 hours. The activity logs its attempts
   * at a bounded rate and the worker counts waiting batches (docs/operations.md "Alerts").
   */
  const { applyToNode: applyUntilDone } = proxyActivities<Activities>({
    ...on,
    startToCloseTimeout: '15 seconds',
    // 200 ms doubling: a node late by seconds is tried again within seconds; after a long outage
    // the attempts settle at one every 5 minutes, so its changes land within 5 minutes of its return.
    // No maximumAttempts: unlimited, until the node answers.
    retry: { initialInterval: '200 ms', backoffCoefficient: 2, maximumInterval: '5 minutes' },
  });
  return { authorizeBatch, applyToNode, applyUntilDone };
}
/** Batches started from this version on retry late nodes with applyUntilDone (older histories replay the loop). */
const SERVER_SIDE_LATE_RETRY = 'whitelist-late-retry-server-side';

const authorizeLocally = proxyLocalActivities<Activities>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 5, initialInterval: '100 ms', nonRetryableErrorTypes: [NodeFailure.forbidden] },
}).authorizeBatch;

/**
 * Batches started from this version on run their precheck and their first round (a few quick tries
 * per node, until the deadline) as local activities: the whole happy path is one workflow task,
 * instead of three workflow tasks and two trips through the task queue (docs/performance.md).
 */
const LOCAL_FIRST_ROUND = 'whitelist-local-first-round';
/**
 * Batches started from this version on run the precheck and the first round as one local activity
 * (`precheckAndFirstRound`): one activation of the workflow for the happy path (issue 17).
 */
const ONE_LOCAL_ROUND = 'whitelist-one-local-round';
/** How long past the deadline a first-round local activity may run before Temporal times it out (it stops itself at the deadline). */
const FIRST_ROUND_GRACE_MS = 5_000;

const QUICK_ATTEMPTS = 3;
const QUICK_BACKOFF_MS = 100;
const PERSISTENT_MAX_BACKOFF_MS = 30_000;

interface NodeState {
  progress: NodeProgress;
  results?: NodeResult[];
  failure?: string;
  /** True when some attempt may have reached the node (a timeout, a broken or unreadable answer). */
  maybeApplied: boolean;
}

const isActivityFailure = (e: unknown): e is ActivityFailure => e instanceof ActivityFailure;

/** An activity's failure: its NodeFailure type and message. */
function nodeFailure(err: unknown): { type: string; message: string } {
  const { type, message } = failureFacts(err, isActivityFailure);
  // No type: a start-to-close timeout or a worker lost mid-call, so the request may have been applied.
  return { type: type ?? NodeFailure.timeout, message };
}

/**
 * One whitelist batch: re-check the caller's authorisation, fan the changes out to their owning
 * storage nodes, and publish the HTTP outcome (200 / 408 / 500) through the `batchOutcome` update
 * as soon as it is known. Afterwards the workflow finishes the job: a late node is retried until
 * it applies (408), or everything applied is reverted (500), so no batch is left half-applied.
 */
export async function whitelistBatchWorkflow(input: WhitelistBatchInput): Promise<WhitelistBatchResult> {
  const { batchId, changes } = input;
  // The activities run on input.activityTaskQueue (the workers' queue, also when the workflow runs
  // on the API's batch worker); older batches run both on their own queue.
  const { authorizeBatch, applyToNode, applyUntilDone } = remoteActivities(input.activityTaskQueue);
  let outcome: WhitelistBatchOutcome | undefined;
  /** The outcome in the compact form (decision 0017), taken when it is decided. */
  let compact: BatchOutcomeMemo | undefined;
  let outcomeAsked = false;
  // The API's owners when they fit the nodes, else (older batches) the same hashing here.
  const givenOwners = input.ownerIndexes?.map((i) => input.nodes[i]) ?? input.owners;
  const groups = (givenOwners && groupByGivenOwners(changes, givenOwners, input.nodes)) || groupByOwner(changes, ownerKey, input.nodes);
  const nodes = new Map<string, NodeState>([...groups.keys()].map((n) => [n, { progress: 'pending', maybeApplied: false }]));

  const progress = () => Object.fromEntries([...nodes].map(([n, s]) => [n, s.progress]));
  const summary = (): WhitelistBatchSummary => ({
    batchId,
    outcome,
    nodes: progress(),
    tokenId: input.tokenId,
    changes: changeViews(changes, groups, nodes),
  });
  // The result leaves out each change's view and the confirmations (the query has the first, the
  // changes the second): at 100 changes they were 28 KB of the batch's history.
  const result = (): WhitelistBatchResult => ({ batchId, tokenId: input.tokenId, outcome: compact, nodes: progress() });
  // The form the API that started the batch reads: compact from this version on, else in full.
  const answer = () => (input.compactOutcome ? compact : outcome);
  setHandler(batchOutcomeUpdate, async () => {
    outcomeAsked = true;
    await condition(() => answer() !== undefined);
    return answer()!;
  });
  setHandler(batchProgressQuery, summary);
  /**
   * Once, when the outcome is decided: its compact form, with the nodes that applied by then, for the
   * Update and the result; and for a batch started eagerly (input.outcomeByMemo) into the memo,
   * where the API reads it once the server has stored this workflow task's completion, so the
   * answer is durable before it is sent, as an Update's would be.
   */
  const publishOutcome = () => {
    if (outcome === undefined || compact !== undefined) return;
    const applied = [...nodes].filter(([, s]) => s.progress === 'applied').map(([node]) => node);
    compact = batchOutcomeMemo(outcome, applied);
    if (input.outcomeByMemo) upsertMemo({ [BATCH_OUTCOME_MEMO]: compact });
  };

  // A batch whose input has activityTaskQueue was started by this version or a later one: it takes
  // every newer path without patch markers, which cost the first workflow task a marker and a
  // search-attribute upsert each. Older inputs ask, as their histories recorded.
  const current = input.activityTaskQueue !== undefined;
  const local = current || patched(LOCAL_FIRST_ROUND);
  const oneRound = current || (local && patched(ONE_LOCAL_ROUND));
  // Forbidden: the token was revoked or lost a scope since the API checked it (403). Anything else
  // (the token file unreadable, say) is our failure, not the caller's (500). No node was asked.
  let refused: WhitelistBatchOutcome | undefined;
  try {
    if (oneRound) {
      const first = await precheckAndFirstRoundLocally(input, groups, nodes);
      if (first.status === 'forbidden') refused = { status: 403, confirmations: [], errorMessage: first.message };
    } else {
      await (local ? authorizeLocally : authorizeBatch)({ tokenId: input.tokenId, changes });
    }
  } catch (err) {
    const failure = nodeFailure(err);
    refused = { status: failure.type === NodeFailure.forbidden ? 403 : 500, confirmations: [], errorMessage: failure.message };
  }
  if (refused) {
    outcome = refused;
    publishOutcome();
    await outcomeDelivered();
    return result();
  }

  // The token id and, for a revert, the batch it undoes travel to the node for its audit trail.
  // Only the activity's input grows: the commands (types, ids, order) are those of older versions.
  const apply = async (
    node: string,
    nodeChanges: WhitelistChange[],
    id: string,
    persistent: boolean,
    state: NodeState,
    revertOf?: string,
  ) => {
    const request = { node, batchId: id, changes: nodeChanges, tokenId: input.tokenId, ...(revertOf === undefined ? {} : { revertOf }) };
    if (persistent && (current || patched(SERVER_SIDE_LATE_RETRY))) return applyUntilDone(request);
    for (let attempt = 1; ; attempt++) {
      try {
        return await applyToNode(request);
      } catch (err) {
        const { type, message } = nodeFailure(err);
        if (mayHaveApplied(type)) state.maybeApplied = true;
        state.failure = `${node}: ${message}`;
        if (!persistent && (!isRetryableNodeFailure(type) || attempt >= QUICK_ATTEMPTS)) throw err;
        const backoff = persistent
          ? Math.min(PERSISTENT_MAX_BACKOFF_MS, QUICK_BACKOFF_MS * 2 ** Math.min(attempt, 20))
          : QUICK_BACKOFF_MS * 2 ** (attempt - 1);
        await sleep(backoff);
      }
    }
  };

  // The deadline counts from the workflow's start, as the API's does from the request, not from
  // the end of the precheck: under load the two would drift apart.
  if (oneRound) {
    // The first round ran with the precheck, above.
  } else if (local) {
    await firstRoundLocally(input, groups, nodes);
  } else {
    // Histories from before LOCAL_FIRST_ROUND: the first round as activities, raced against a timer.
    const runs = [...groups].map(async ([node, items]) => {
      const state = nodes.get(node)!;
      try {
        state.results = await apply(
          node,
          items.map((i) => i.item),
          batchId,
          false,
          state,
        );
        state.progress = 'applied';
      } catch {
        state.progress = 'failed';
      }
    });
    const remainingMs = Math.max(1, input.deadlineMs - (Date.now() - workflowInfo().startTime.getTime()));
    await condition(() => settled(nodes) || failed(nodes) !== undefined, remainingMs);
    outcome = decideOutcome(input, groups, nodes);
    publishOutcome();
    await Promise.all(runs);
  }
  outcome ??= decideOutcome(input, groups, nodes);
  publishOutcome();

  await Promise.all(
    [...groups].map(async ([node, items]) => {
      const state = nodes.get(node)!;
      const nodeChanges = items.map((i) => i.item);
      if (outcome!.status !== 500) {
        // 408: a late node is retried until it applies.
        if (state.progress === 'failed' || state.progress === 'pending') {
          state.progress = 'failed';
          state.results = await apply(node, nodeChanges, batchId, true, state);
          state.progress = 'applied';
        }
        return;
      }
      // 500: undo what this batch changed. A node whose answer we never read but which may have
      // applied is asked again (idempotent per batchId) to learn what it changed.
      if (state.progress === 'failed' || state.progress === 'pending') {
        if (!state.maybeApplied) {
          state.progress = 'not-applied';
          return;
        }
        state.progress = 'failed';
        state.results = await apply(node, nodeChanges, batchId, true, state);
      }
      const undo = inverseChanges(state.results ?? []);
      if (undo.length > 0) await apply(node, undo, `${batchId}:revert`, true, state, batchId);
      state.progress = 'reverted';
    }),
  );

  await outcomeDelivered();
  return result();

  /**
   * Ends only once the outcome has been answered. A batch started eagerly (input.outcomeByUpdate)
   * is asked for its outcome by an Update sent right after the start, which may arrive after the
   * happy path is done: the workflow waits for it, until the API would have given up (deadline
   * and its margin, counted from the start), so that the Update finds the workflow open.
   */
  async function outcomeDelivered(): Promise<void> {
    if (input.outcomeByUpdate && !outcomeAsked) {
      const waitMs = workflowInfo().startTime.getTime() + input.deadlineMs + input.outcomeByUpdate.marginMs - Date.now();
      if (waitMs > 0) await condition(() => outcomeAsked, waitMs);
    }
    await condition(allHandlersFinished);
  }
}

type Groups = OwnerGroups<WhitelistChange>;
/** One node's share of a batch: its changes, each with its index in the request. */
type Share = readonly { index: number; item: WhitelistChange }[];

/** Each change, in request order, with its node and, once that node answered, whether it changed the set. */
function changeViews(changes: readonly WhitelistChange[], groups: Groups, nodes: Map<string, NodeState>): BatchChangeView[] {
  const views: BatchChangeView[] = changes.map((change) => ({ ...change, node: '' }));
  for (const [node, items] of groups) {
    const results = nodes.get(node)!.results;
    items.forEach((item, position) => {
      const changed = results?.[position]?.changed;
      views[item.index] = { ...changes[item.index], node, ...(changed === undefined ? {} : { changed }) };
    });
  }
  return views;
}

const settled = (nodes: Map<string, NodeState>) => [...nodes.values()].every((s) => s.progress !== 'pending');
const failed = (nodes: Map<string, NodeState>) => [...nodes.values()].find((s) => s.progress === 'failed');

/** The HTTP outcome from the nodes' progress: one failed node fails the batch; else every node applied, or 408. */
function decideOutcome(input: WhitelistBatchInput, groups: Groups, nodes: Map<string, NodeState>): WhitelistBatchOutcome {
  const firstFailure = failed(nodes);
  if (firstFailure) return { status: 500, confirmations: [], errorMessage: `storage node failed: ${firstFailure.failure}` };
  if (settled(nodes)) return { status: 200, confirmations: input.changes.map(confirmationOfChecksummed) };
  const confirmed = input.changes
    .filter((_, index) => {
      for (const [node, items] of groups) if (items.some((i) => i.index === index)) return nodes.get(node)!.progress === 'applied';
      return false;
    })
    .map(confirmationOfChecksummed);
  return {
    status: 408,
    confirmations: confirmed,
    errorMessage: `not every storage node answered within ${input.deadlineMs} ms; the rest is being retried`,
  };
}

/**
 * The first round as local activities, in the workflow task that started the batch: each node
 * gets a few quick tries that stop at the deadline by themselves, so no timer is needed (a timer
 * could only start once the workflow task completes, which waits for the local activities).
 * A node still pending afterwards was late.
 */
async function firstRoundLocally(input: WhitelistBatchInput, groups: Groups, nodes: Map<string, NodeState>): Promise<void> {
  const deadlineAt = workflowInfo().startTime.getTime() + input.deadlineMs;
  const { applyToNodeQuickly } = proxyLocalActivities<Activities>({
    startToCloseTimeout: Math.max(1, deadlineAt - Date.now()) + FIRST_ROUND_GRACE_MS,
    retry: { maximumAttempts: 1 },
  });
  await Promise.all(
    [...groups].map(async ([node, items]) => {
      const state = nodes.get(node)!;
      let answer: QuickApplyResult;
      try {
        answer = await applyToNodeQuickly({
          node,
          batchId: input.batchId,
          tokenId: input.tokenId,
          changes: items.map((i) => i.item),
          deadlineAt,
          attempts: QUICK_ATTEMPTS,
          backoffMs: QUICK_BACKOFF_MS,
        });
      } catch (err) {
        // Timed out by Temporal (a stalled worker), or a bug in the activity.
        const failure = nodeFailure(err);
        const message = `${node}: ${failure.message}`;
        answer =
          failure.type === NodeFailure.timeout
            ? { status: 'late', message, maybeApplied: true }
            : { status: 'failed', type: failure.type, message, maybeApplied: true };
      }
      recordQuickAnswer(node, state, answer, items);
    }),
  );
}

/** A node's first-round answer for its share (`items`, in the order the node applied them), into its state. */
function recordQuickAnswer(node: string, state: NodeState, answer: QuickApplyResult, items: Share): void {
  if (answer.status === 'applied') {
    if ('results' in answer) {
      state.results = answer.results;
    } else if (answer.changed.length === items.length) {
      state.results = items.map(({ item }, k) => ({ ...item, changed: answer.changed[k] }));
    } else {
      // Not one flag per change: nothing says what the node changed. The batch fails (500), and the
      // node, asked again under the same batch id (idempotent), says it so that it can be reverted.
      const message = `${node}: the first round's answer has ${answer.changed.length} flags for ${items.length} changes`;
      recordQuickAnswer(node, state, { status: 'failed', type: NodeFailure.badResponse, message, maybeApplied: true }, items);
      return;
    }
    state.progress = 'applied';
    return;
  }
  state.failure = answer.message;
  state.maybeApplied ||= answer.maybeApplied;
  if (answer.status === 'failed') state.progress = 'failed';
}

/**
 * The precheck and the first round in one local activity (ONE_LOCAL_ROUND): the activity checks
 * the token and only then asks the nodes, each with a few quick tries that stop at the deadline.
 * A timeout of the activity itself (a stalled worker) leaves every node late, maybe applied.
 */
async function precheckAndFirstRoundLocally(
  input: WhitelistBatchInput,
  groups: Groups,
  nodes: Map<string, NodeState>,
): Promise<{ status: 'forbidden'; message: string } | { status: 'ran' }> {
  const deadlineAt = workflowInfo().startTime.getTime() + input.deadlineMs;
  const attemptMs = Math.max(1, deadlineAt - Date.now()) + FIRST_ROUND_GRACE_MS;
  const { precheckAndFirstRound } = proxyLocalActivities<Activities>({
    startToCloseTimeout: attemptMs,
    // A hung attempt is tried once more; then the batch gives up (500, reverted) instead of waiting.
    scheduleToCloseTimeout: 2 * attemptMs,
    // Only the precheck can throw (a refused token is an answer): a retry asks no node twice.
    retry: { maximumAttempts: 5, initialInterval: '100 ms', nonRetryableErrorTypes: [NodeFailure.forbidden] },
  });
  let result: FirstRoundResult;
  try {
    result = await precheckAndFirstRound({
      batchId: input.batchId,
      tokenId: input.tokenId,
      changes: input.changes,
      perNode: [...groups].map(([node, items]) => ({ node, indexes: items.map((i) => i.index) })),
      deadlineAt,
      attempts: QUICK_ATTEMPTS,
      backoffMs: QUICK_BACKOFF_MS,
    });
  } catch (err) {
    const failure = nodeFailure(err);
    if (failure.type !== NodeFailure.timeout) throw err; // the precheck failed: no node was asked
    // Timed out by Temporal (a stalled worker, a precheck that hung): whether the precheck passed is
    // unknown, so nothing may be applied later on its word. Every node counts as failed and maybe
    // applied: the batch answers 500 and each node is asked what it changed, which is reverted.
    for (const [node, state] of nodes)
      recordQuickAnswer(
        node,
        state,
        { status: 'failed', type: NodeFailure.timeout, message: `${node}: ${failure.message}`, maybeApplied: true },
        [],
      );
    return { status: 'ran' };
  }
  if (result.status === 'forbidden') return result;
  for (const [node, state] of nodes)
    recordQuickAnswer(
      node,
      state,
      result.nodes[node] ?? { status: 'late', message: `${node}: no answer`, maybeApplied: true },
      groups.get(node)!,
    );
  return { status: 'ran' };
}
