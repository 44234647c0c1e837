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
import { groupByGivenOwners, groupByOwner, type OwnerGroups } from '../domain/rendezvous';
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
 * One whitelist batch: re-check the caller's authorisation, fan the changes out to their owning
 * storage nodes, and publish the HTTP outcome (200 / 408 / 500) through the `batchOutcome` update
 * as soon as it is known. Afterwards the workflow finishes the job: a late node is retried until
 * it applies (408), or every node that may have applied is told to revert the batch (500), so no
 * batch is left half-applied. Every change carries the batch's position, its workflow's start.
 */
export async function whitelistBatchWorkflow(input: WhitelistBatchInput): Promise<WhitelistBatchResult> {
  const { batchId, changes } = input;
  const position = workflowInfo().startTime.getTime();
  let outcome: BatchOutcome | undefined;
  /** The outcome in the compact form (decision 0017), taken when it is decided. */
  let compact: BatchOutcomeMemo | undefined;
  // The API's owners when they fit the nodes, else the same hashing here.
  const givenOwners = input.ownerIndexes.map((i) => input.nodes[i]);
  const groups = groupByGivenOwners(changes, givenOwners, input.nodes) || groupByOwner(changes, ownerKey, input.nodes);
  const nodes = new Map<string, NodeState>([...groups.keys()].map((n) => [n, { progress: 'pending', maybeApplied: false }]));

  const progress = () => Object.fromEntries([...nodes].map(([n, s]) => [n, s.progress]));
  const summary = (): BatchWorkflowStatus => ({
    batchId,
    outcome,
    nodes: progress(),
    tokenId: input.tokenId,
    changes: changeViews(changes, groups, nodes),
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
    const first = await precheckAndFirstRoundLocally(input, position, groups, nodes);
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
  outcome = decideOutcome(input, groups, nodes);
  publishOutcome();

  await Promise.all(
    [...groups].map(async ([node, items]) => {
      const state = nodes.get(node)!;
      const request = { node, batchId, position, tokenId: input.tokenId, changes: items.map((i) => i.item) };
      if (outcome!.status !== 500) {
        // 408: a late node is retried until it applies.
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

/** Each change, in request order, with its node and, once that node answered, whether it changed the set. */
function changeViews(changes: readonly WhitelistChange[], groups: Groups, nodes: Map<string, NodeState>): BatchChange[] {
  const views: BatchChange[] = changes.map((change) => ({ ...change, node: '' }));
  for (const [node, items] of groups) {
    const results = nodes.get(node)!.results;
    items.forEach((item, k) => {
      const result = results?.[k];
      views[item.index] = {
        ...changes[item.index],
        node,
        ...(result === undefined ? {} : { changed: result.changed, ...(result.superseded ? { superseded: true } : {}) }),
      };
    });
  }
  return views;
}

const settled = (nodes: Map<string, NodeState>) => [...nodes.values()].every((s) => s.progress !== 'pending');
const failed = (nodes: Map<string, NodeState>) => [...nodes.values()].find((s) => s.progress === 'failed');

/** The HTTP outcome from the nodes' progress: one failed node fails the batch; else every node applied, or 408. */
function decideOutcome(input: WhitelistBatchInput, groups: Groups, nodes: Map<string, NodeState>): BatchOutcome {
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

/** A node's first-round answer for its share (`items`, in the order the node applied them), into its state. */
function recordFirstRoundAnswer(node: string, state: NodeState, answer: FirstRoundNodeResult, items: Share): void {
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
  if (answer.status === 'failed') state.progress = 'failed';
}

/**
 * The precheck and the first round in one local activity: the activity checks
 * the token and only then asks the nodes, each with a few quick tries that stop at the deadline.
 * A timeout of the activity itself (a stalled worker) leaves every node late, maybe applied.
 */
async function precheckAndFirstRoundLocally(
  input: WhitelistBatchInput,
  position: number,
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
    );
  return { status: 'ran' };
}
