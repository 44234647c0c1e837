import {
  ActivityFailure,
  allHandlersFinished,
  condition,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../contracts/activities';
import { batchOutcomeMemo, type BatchOutcomeMemo } from '../domain/batch-outcome-memo';
import { failureFacts } from '../domain/failure-facts';
import { groupByReplicas, majorityOf, replicasOf, type OwnerGroups } from '../domain/rendezvous';
import { confirmationOfChecksummed, ownerKey, type WhitelistChange } from '../domain/whitelist-messages';
import type { ChangeResult } from '../domain/whitelist-messages';
import {
  NodeFailure,
  batchOutcomeUpdate,
  type FirstRoundNodeResult,
  type FirstRoundResult,
  batchStatusQuery,
  type NodeStatus,
  type WhitelistBatchInput,
  type WhitelistBatchResult,
  type BatchWorkflowStatus,
  type BatchOutcome,
  type BatchChange,
} from '../contracts/temporal';

/**
 * After the HTTP answer (a late node after a 408, a revert after a 500): one activity whose retries
 * are Temporal's, server side, until the node answers. A retry attempt writes no history event, so
 * a node down for days leaves the batch's history as it was (three events for the activity in
 * all). The activity logs its attempts at a bounded rate and the worker counts waiting batches
 * (docs/operations.md "Alerts"). The node applies each change by its place in the order of
 * batches, so a delivery that comes late cannot undo a newer batch (decision 0061).
 */
const { applyToNode: applyUntilDone } = proxyActivities<Activities>({
  startToCloseTimeout: '15 seconds',
  // 200 ms doubling: a node late by seconds is tried again within seconds; after a long outage
  // the attempts settle at one every 5 minutes, so its changes land within 5 minutes of its return.
  // No maximumAttempts: unlimited, until the node answers.
  retry: { initialInterval: '200 ms', backoffCoefficient: 2, maximumInterval: '5 minutes' },
});

/** How long past the deadline the first-round local activity may run before Temporal times it out (it stops itself at the deadline). */
const FIRST_ROUND_GRACE_MS = 5_000;

const QUICK_ATTEMPTS = 3;
const QUICK_BACKOFF_MS = 100;

interface NodeState {
  progress: NodeStatus;
  results?: ChangeResult[];
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
 * One whitelist batch: re-check the caller's authorisation, fan each change out to every replica
 * of its entry, and publish the HTTP outcome (200 / 408 / 500) through the `batchOutcome` update
 * as soon as it is known: 200 once a majority of each change's replicas applied it (decision
 * 0093). Afterwards the workflow finishes the job: every replica that has not applied is retried
 * until it does (after 200 and 408 alike), or every node that may have applied is told to revert
 * the batch (500), so no batch is left half-applied. Every change carries the batch's position,
 * its workflow's start, and its index in the batch.
 */
export async function whitelistBatchWorkflow(input: WhitelistBatchInput): Promise<WhitelistBatchResult> {
  const { batchId, changes } = input;
  const position = workflowInfo().startTime.getTime();
  let outcome: BatchOutcome | undefined;
  /** The outcome in the compact form (decision 0017), taken when it is decided. */
  let compact: BatchOutcomeMemo | undefined;
  // The API's replicas when they fit the nodes, else the same hashing here.
  const given = input.replicaIndexes.map((set) => set.map((i) => input.nodes[i]));
  const hashed = () => changes.map((change) => replicasOf(ownerKey(change), input.nodes, input.replicas));
  const replicaSets = groupByReplicas(changes, given, input.nodes) ? given : hashed();
  const groups = groupByReplicas(changes, replicaSets, input.nodes)!;
  const nodes = new Map<string, NodeState>([...groups.keys()].map((n) => [n, { progress: 'pending', maybeApplied: false }]));

  const progress = () => Object.fromEntries([...nodes].map(([n, s]) => [n, s.progress]));
  const summary = (): BatchWorkflowStatus => ({
    batchId,
    outcome,
    nodes: progress(),
    tokenId: input.tokenId,
    changes: changeViews(changes, replicaSets, groups, nodes),
  });
  // The result leaves out each change's view and the confirmations (the query has the first, the
  // changes the second): at 100 changes they were 28 KB of the batch's history.
  const result = (): WhitelistBatchResult => ({ batchId, tokenId: input.tokenId, outcome: compact, nodes: progress() });
  setHandler(batchOutcomeUpdate, async () => {
    await condition(() => compact !== undefined);
    return compact!;
  });
  setHandler(batchStatusQuery, summary);
  /** Once, when the outcome is decided: its compact form, with the nodes that applied by then, for the Update and the result. */
  const publishOutcome = () => {
    if (outcome === undefined || compact !== undefined) return;
    const applied = [...nodes].filter(([, s]) => s.progress === 'applied').map(([node]) => node);
    compact = batchOutcomeMemo(outcome, applied);
  };

  // Forbidden: the token was revoked or lost a scope since the API checked it (403). Anything else
  // (the token file unreadable, say) is our failure, not the caller's (500). No node was asked.
  let refused: BatchOutcome | undefined;
  try {
    const first = await precheckAndFirstRoundLocally(input, position, replicaSets, groups, nodes);
    if (first.status === 'forbidden') refused = { status: 403, confirmations: [], errorMessage: first.message };
  } catch (err) {
    const failure = nodeFailure(err);
    refused = { status: failure.type === NodeFailure.forbidden ? 403 : 500, confirmations: [], errorMessage: failure.message };
  }
  if (refused) {
    outcome = refused;
    publishOutcome();
    await condition(allHandlersFinished);
    return result();
  }
  outcome = decideOutcome(input, replicaSets, nodes);
  publishOutcome();

  await Promise.all(
    [...groups].map(async ([node, items]) => {
      const state = nodes.get(node)!;
      const request = {
        node,
        batchId,
        position,
        tokenId: input.tokenId,
        changes: items.map((i) => i.item),
        indexes: items.map((i) => i.index),
      };
      if (outcome!.status !== 500) {
        // 200 and 408: a replica that has not applied (late, or down while a majority applied) is
        // retried until it does.
        if (state.progress === 'failed' || state.progress === 'pending') {
          state.progress = 'failed';
          state.results = await applyUntilDone(request);
          state.progress = 'applied';
        }
        return;
      }
      // 500: a node that may have applied is told to revert the batch. The node undoes a change
      // only where nothing newer has decided its entry, and remembers the revert, so that the
      // batch's own request, should it still arrive, is not applied.
      if (state.progress !== 'applied' && !state.maybeApplied) {
        state.progress = 'not-applied';
        return;
      }
      state.progress = 'failed';
      await applyUntilDone({ ...request, revert: true });
      state.progress = 'reverted';
    }),
  );

  await condition(allHandlersFinished);
  return result();
}

type Groups = OwnerGroups<WhitelistChange>;
/** One node's share of a batch: its changes, each with its index in the request. */
type Share = readonly { index: number; item: WhitelistChange }[];

/**
 * Each change, in request order, with its replicas (the first named its node) and, once a replica
 * answered, whether it changed the set: the first replica's answer that is in.
 */
function changeViews(
  changes: readonly WhitelistChange[],
  replicaSets: readonly string[][],
  groups: Groups,
  nodes: Map<string, NodeState>,
): BatchChange[] {
  const answers = new Map<number, { rank: number; result: ChangeResult }>();
  const views: BatchChange[] = changes.map((change, index) => ({ ...change, node: replicaSets[index][0], replicas: replicaSets[index] }));
  for (const [node, items] of groups) {
    const results = nodes.get(node)!.results;
    items.forEach((item, k) => {
      const result = results?.[k];
      if (result === undefined) return;
      // The answer of the replica with the highest weight wins (they may differ: one was behind).
      const rank = replicaSets[item.index].indexOf(node);
      const known = answers.get(item.index);
      if (known === undefined || rank < known.rank) answers.set(item.index, { rank, result });
    });
  }
  for (const [index, { result }] of answers) {
    views[index] = { ...views[index], changed: result.changed, ...(result.superseded ? { superseded: true } : {}) };
  }
  return views;
}

/** How many of a change's replicas applied it. */
const appliedCount = (set: readonly string[], nodes: Map<string, NodeState>) =>
  set.filter((node) => nodes.get(node)!.progress === 'applied').length;

/**
 * The HTTP outcome from the replicas' progress (decision 0093): 200 when a majority of every
 * change's replicas applied it; else 500 when a change short of its majority has a replica that
 * failed for good (non-2xx, unreadable; with one copy per entry also unreachable or reset on
 * every quick try): the seed's answer for a failed send, reverted; else 408 with the confirmations of the
 * changes that have their majority, the rest completed when their nodes are back.
 */
function decideOutcome(input: WhitelistBatchInput, replicaSets: readonly string[][], nodes: Map<string, NodeState>): BatchOutcome {
  const short = replicaSets.flatMap((set, index) => (appliedCount(set, nodes) >= majorityOf(set.length) ? [] : [index]));
  if (short.length === 0) return { status: 200, confirmations: input.changes.map(confirmationOfChecksummed) };
  const failure = short.flatMap((index) => replicaSets[index]).find((node) => nodes.get(node)!.progress === 'failed');
  if (failure !== undefined) return { status: 500, confirmations: [], errorMessage: `storage node failed: ${nodes.get(failure)!.failure}` };
  const lacking = new Set(short);
  return {
    status: 408,
    confirmations: input.changes.filter((_, index) => !lacking.has(index)).map(confirmationOfChecksummed),
    errorMessage: `not a majority of every change's storage nodes answered within ${input.deadlineMs} ms; the rest is being retried`,
  };
}

/**
 * A node's first-round answer for its share (`items`, in the order the node applied them), into its
 * state. With `downIsLate` (each entry has several replicas), a node that could not be reached
 * (refused, reset or silent on every quick try) is late, not failed: it is down or cut off, and
 * its copy is completed when it is back (decision 0093).
 */
function recordFirstRoundAnswer(node: string, state: NodeState, answer: FirstRoundNodeResult, items: Share, downIsLate = false): void {
  if (answer.status === 'applied') {
    if (answer.changed.length === items.length && answer.superseded.length === items.length) {
      state.results = items.map(({ item }, k) => ({ ...item, changed: answer.changed[k], superseded: answer.superseded[k] }));
    } else {
      // Not one flag per change: nothing says what the node changed. The batch fails (500), and the
      // node, asked again under the same batch id (idempotent), says it so that it can be reverted.
      const message = `${node}: the first round's answer has ${answer.changed.length} flags for ${items.length} changes`;
      recordFirstRoundAnswer(node, state, { status: 'failed', type: NodeFailure.badResponse, message, maybeApplied: true }, items);
      return;
    }
    state.progress = 'applied';
    return;
  }
  state.failure = answer.message;
  state.maybeApplied ||= answer.maybeApplied;
  const unreached = answer.status === 'failed' && (answer.type === NodeFailure.unreachable || answer.type === NodeFailure.timeout);
  if (answer.status === 'failed' && !(downIsLate && unreached)) state.progress = 'failed';
}

/**
 * The precheck and the first round in one local activity: the activity checks
 * the token and only then asks the nodes, each with a few quick tries that stop at the deadline.
 * A timeout of the activity itself (a stalled worker) leaves every node late, maybe applied.
 */
async function precheckAndFirstRoundLocally(
  input: WhitelistBatchInput,
  position: number,
  replicaSets: readonly string[][],
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
      position,
      tokenId: input.tokenId,
      changes: input.changes,
      perNode: [...groups].map(([node, items]) => ({ node, indexes: items.map((i) => i.index) })),
      quorum: replicaSets.map((set) => majorityOf(set.length)),
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
      recordFirstRoundAnswer(
        node,
        state,
        { status: 'failed', type: NodeFailure.timeout, message: `${node}: ${failure.message}`, maybeApplied: true },
        [],
      );
    return { status: 'ran' };
  }
  if (result.status === 'forbidden') return result;
  for (const [node, state] of nodes)
    recordFirstRoundAnswer(
      node,
      state,
      result.nodes[node] ?? { status: 'late', message: `${node}: no answer`, maybeApplied: true },
      groups.get(node)!,
      Math.min(input.replicas, input.nodes.length) > 1,
    );
  return { status: 'ran' };
}
