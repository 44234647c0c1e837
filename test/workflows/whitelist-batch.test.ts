import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { createActivities } from '../../activities';
import type { ChangeResult } from '../../domain/whitelist-messages';
import { outcomeOfMemo } from '../../domain/batch-outcome-memo';
import { confirmationOfChecksummed, type WhitelistChange } from '../../domain/whitelist-messages';
import {
  NodeFailure,
  WHITELIST_BATCH_WORKFLOW_TYPE,
  batchOutcomeUpdate,
  type FirstRoundNodeResult,
  type WhitelistBatchInput,
} from '../../contracts/temporal';
import { eventTypes, timeSkippingEnv, workflowWorker } from './env';

type Activities = ReturnType<typeof createActivities>;
const NODES = ['http://node-1', 'http://node-2', 'http://node-3'];
const DAY = 24 * 3_600_000;

/** One node's share of a batch in the first round, as the local activity sees it. */
interface FirstRoundShare {
  node: string;
  position: number;
  changes: WhitelistChange[];
}

/** How one mocked node behaves for one batch: its first round, and its later (Temporal-retried) applies. */
interface NodeScript {
  firstRound?: (input: FirstRoundShare) => FirstRoundNodeResult;
  /** `attempt` and `scheduledAt` (server time of this attempt) as Temporal reports them. */
  apply?: (changes: WhitelistChange[], attempt: number, scheduledAt: number) => ChangeResult[];
}

const applied = (changes: WhitelistChange[]): ChangeResult[] => changes.map((c) => ({ ...c, changed: true, superseded: false }));
/** A first round that applied every change, as the activity answers it (decision 0017: the flags only). */
const appliedInFirstRound = (changes: WhitelistChange[]): FirstRoundNodeResult => ({
  status: 'applied',
  changed: changes.map(() => true),
  superseded: changes.map(() => false),
});
const refuse = (type: string, message: string) => ApplicationFailure.create({ type, message });
/** A node that has not answered by the deadline. */
const late = (i: FirstRoundShare): FirstRoundNodeResult => ({ status: 'late', message: `${i.node}: no answer`, maybeApplied: true });

// The whitelist batch workflow alone, on Temporal's time-skipping test server, with its activities
// mocked: the outcomes of the first round (200, 403, 408 with the partial result, 500 with revert)
// and what happens after the answer, including a node down for a week in skipped time.
describe('workflow: whitelistBatchWorkflow (time-skipping test server, mocked activities)', function () {
  this.timeout(180_000);
  let env: TestWorkflowEnvironment;
  let stopWorker: () => Promise<void>;
  const taskQueue = `wf-batch-${randomUUID()}`;
  const scripts = new Map<string, Record<string, NodeScript>>();
  interface Call {
    activity: string;
    batchId: string;
    node?: string;
    changes?: WhitelistChange[];
    attempt?: number;
    position?: number;
    revert?: boolean;
  }
  const calls: Call[] = [];
  const scriptOf = (batchId: string, node: string): NodeScript => scripts.get(batchId)?.[node] ?? {};

  const activities: Pick<Activities, 'applyToNode' | 'precheckAndFirstRound'> = {
    // As the real one: the precheck, then each node's first-round tries (scripted like applyFirstRound's).
    async precheckAndFirstRound(input) {
      calls.push({ activity: 'precheckAndFirstRound', batchId: input.batchId, changes: input.changes });
      if (input.tokenId === 'revoked') return { status: 'forbidden', message: 'token was revoked' };
      // A precheck that hangs (a token file on a stalled disk): Temporal times the attempt out.
      if (input.tokenId === 'hangs') await Context.current().sleep(6_000); // past the 5.1 s attempt; ends when Temporal cancels it
      const nodes: Record<string, FirstRoundNodeResult> = {};
      for (const { node, indexes } of input.perNode) {
        const share = { node, position: input.position, changes: indexes.map((i) => input.changes[i]) };
        calls.push({ activity: 'firstRoundTry', batchId: input.batchId, node, changes: share.changes, position: input.position });
        nodes[node] = scriptOf(input.batchId, node).firstRound?.(share) ?? appliedInFirstRound(share.changes);
      }
      return { status: 'ran', nodes };
    },
    async applyToNode(request) {
      const { attempt, currentAttemptScheduledTimestampMs } = Context.current().info;
      const { batchId, node, changes, position, revert } = request;
      calls.push({ activity: revert ? 'revert' : 'applyToNode', batchId, node, changes, attempt, position, revert });
      if (revert) return changes.map((c) => ({ ...c, changed: true, superseded: false }));
      return (
        scriptOf(request.batchId, request.node).apply?.(request.changes, attempt, currentAttemptScheduledTimestampMs) ??
        applied(request.changes)
      );
    },
  };

  before(async () => {
    env = await timeSkippingEnv();
    stopWorker = (await workflowWorker(env, taskQueue, activities)).stop;
  });
  after(async () => {
    await stopWorker?.();
    await env?.teardown();
  });

  const change = (i: number, op: WhitelistChange['op_type'] = 'add_entry'): WhitelistChange => ({
    op_type: op,
    kind: i % 2 ? 'user' : 'developer',
    entry: `0x${String(i).padStart(40, '0')}`,
  });

  /**
   * Starts a batch of six changes, two per node (change i on node i % 3), and reads its HTTP
   * outcome: through the `batchOutcome` Update (as the API does) when the batch goes on after its
   * answer, else from its result. (A batch that answers and completes in one workflow task sends
   * the Update's answer after CompleteWorkflowExecution, which the real server takes and the Java
   * test server refuses: "CompleteWorkflowExecution must be the last command".) `answer` is what
   * the workflow said, `outcome` the HTTP outcome the API makes of it.
   */
  async function runBatch(
    nodeScripts: Record<string, NodeScript>,
    options: { tokenId?: string; goesOn?: boolean; deadlineMs?: number; replicas?: 1 | 3 } = {},
  ) {
    const tokenId = options.tokenId ?? 'token';
    const batchId = randomUUID();
    scripts.set(batchId, nodeScripts);
    const changes = [0, 1, 2, 3, 4, 5].map((i) => change(i));
    // One copy: change i on node i % 3; three: every change on every node, node i % 3 first.
    const replicaIndexes = changes.map((_, i) => (options.replicas === 3 ? [i % 3, (i + 1) % 3, (i + 2) % 3] : [i % 3]));
    const sets = replicaIndexes.map((set) => set.map((n) => NODES[n]));
    const input: WhitelistBatchInput = {
      batchId,
      tokenId,
      changes,
      nodes: NODES,
      replicas: options.replicas ?? 1,
      replicaIndexes,
      deadlineMs: options.deadlineMs ?? 5_000,
    };
    const workflowId = `whitelist-batch:${batchId}`;
    const handle = await env.client.workflow.start(WHITELIST_BATCH_WORKFLOW_TYPE, { workflowId, taskQueue, args: [input] });
    const answer = options.goesOn ? await handle.executeUpdate(batchOutcomeUpdate) : (await handle.result()).outcome!;
    const callsOf = (activity: string, id = batchId) => calls.filter((c) => c.activity === activity && c.batchId === id);
    return { batchId, changes, handle, answer, outcome: outcomeOfMemo(answer, changes, sets), workflowId, callsOf };
  }

  /**
   * Every node that may have applied is told to revert the batch: its own changes, at the batch's
   * position (the node undoes what no newer batch has decided), and nothing is asked again first.
   */
  async function assertAllReverted(batch: Awaited<ReturnType<typeof runBatch>>) {
    assert.deepEqual(Object.values((await batch.handle.result()).nodes), ['reverted', 'reverted', 'reverted']);
    assert.equal(batch.callsOf('applyToNode').length, 0, 'no node is asked again before its revert');
    const reverts = batch.callsOf('revert');
    assert.deepEqual(reverts.map((r) => r.node).sort(), NODES);
    const [first] = batch.callsOf('firstRoundTry');
    for (const r of reverts) {
      assert.equal(r.position, first.position, "the revert carries the batch's own position");
      assert.deepEqual(
        r.changes,
        batch.changes.filter((_, i) => NODES[i % 3] === r.node),
        "the node's share, as sent",
      );
    }
  }

  it('when every node applies in the first round, then the outcome is 200 with one confirmation per change in request order, and every node is applied', async () => {
    const { batchId, changes, handle, outcome, callsOf } = await runBatch({});
    assert.equal(outcome.status, 200);
    assert.deepEqual(outcome.confirmations, changes.map(confirmationOfChecksummed));
    // The result is compact (decision 0017): no confirmations, no per-change views.
    assert.deepEqual(await handle.result(), {
      batchId,
      tokenId: 'token',
      outcome: { status: 200 },
      nodes: { [NODES[0]]: 'applied', [NODES[1]]: 'applied', [NODES[2]]: 'applied' },
    });
    assert.equal(callsOf('precheckAndFirstRound').length, 1, 'one local activity for the precheck and the first round');
    assert.equal(callsOf('firstRoundTry').length, 3, 'each node tried in it');
    assert.equal(callsOf('applyToNode').length + callsOf('revert').length, 0, 'no other activity, no retry round');
    const positions = new Set(callsOf('firstRoundTry').map((c) => c.position));
    const started = (await handle.describe()).startTime.getTime();
    assert.deepEqual([...positions], [started], "every node's share carries the batch's position: its workflow's start");
  });

  const refused = (i: FirstRoundShare): FirstRoundNodeResult => ({
    status: 'failed',
    type: NodeFailure.unreachable,
    message: `${i.node} unreachable (ECONNREFUSED)`,
    maybeApplied: false,
  });

  it('when each entry has three replicas and one node is down, then a majority of every change applied: the outcome is 200, and the down node gets its share once it is back', async () => {
    let down = true;
    const { changes, handle, answer, outcome, callsOf } = await runBatch(
      {
        [NODES[1]]: {
          firstRound: refused,
          apply: (share, attempt) => {
            if (attempt < 3) throw refuse(NodeFailure.unreachable, 'still down');
            down = false;
            return applied(share);
          },
        },
      },
      { replicas: 3, goesOn: true },
    );
    assert.deepEqual(answer, { status: 200 });
    assert.deepEqual(outcome.confirmations, changes.map(confirmationOfChecksummed));
    assert.deepEqual((await handle.result()).nodes, { [NODES[0]]: 'applied', [NODES[1]]: 'applied', [NODES[2]]: 'applied' });
    assert.equal(down, false, 'the down node was retried until it applied');
    const [retry] = callsOf('applyToNode');
    assert.deepEqual(retry.changes, changes, 'every change, in batch order: the node holds a copy of each');
  });

  it('when each entry has three replicas and two nodes are down, then no change has its majority: the outcome is 408 with no confirmation, never 200, and the batch is completed when they are back', async () => {
    const backAfter = (share: WhitelistChange[], attempt: number) => {
      if (attempt < 3) throw refuse(NodeFailure.unreachable, 'still down');
      return applied(share);
    };
    const { handle, answer, outcome, callsOf } = await runBatch(
      { [NODES[1]]: { firstRound: refused, apply: backAfter }, [NODES[2]]: { firstRound: refused, apply: backAfter } },
      { replicas: 3, goesOn: true },
    );
    assert.equal(answer.status, 408);
    assert.deepEqual(outcome.confirmations, [], 'one copy of three is no majority');
    assert.deepEqual(Object.values((await handle.result()).nodes), ['applied', 'applied', 'applied']);
    assert.equal(callsOf('revert').length, 0, 'nothing is reverted');
  });

  it('when each entry has three replicas and two nodes refuse (non-2xx), then no change has its majority: the outcome is 500 and the one node that applied reverts', async () => {
    const rejected = (i: FirstRoundShare): FirstRoundNodeResult => ({
      status: 'failed',
      type: NodeFailure.rejected,
      message: `${i.node}: answered HTTP 500`,
      maybeApplied: false,
    });
    const { handle, outcome, callsOf } = await runBatch(
      { [NODES[1]]: { firstRound: rejected }, [NODES[2]]: { firstRound: rejected } },
      { replicas: 3, goesOn: true },
    );
    assert.equal(outcome.status, 500);
    assert.deepEqual((await handle.result()).nodes, { [NODES[0]]: 'reverted', [NODES[1]]: 'not-applied', [NODES[2]]: 'not-applied' });
    assert.deepEqual(
      callsOf('revert').map((r) => r.node),
      [NODES[0]],
    );
  });

  it('when each entry has three replicas and two nodes are late at the deadline, then the outcome is 408 with no confirmation, and both are completed afterwards', async () => {
    const { handle, answer, outcome, callsOf } = await runBatch(
      { [NODES[1]]: { firstRound: late }, [NODES[2]]: { firstRound: late } },
      { replicas: 3, goesOn: true },
    );
    assert.equal(answer.status, 408);
    assert.deepEqual(outcome.confirmations, [], 'one copy of three is no majority');
    assert.deepEqual(Object.values((await handle.result()).nodes), ['applied', 'applied', 'applied']);
    assert.deepEqual(
      callsOf('applyToNode')
        .map((c) => c.node)
        .sort(),
      [NODES[1], NODES[2]],
    );
  });

  it('when the precheck denies the token, then the outcome is 403 and no node is asked', async () => {
    const { outcome, batchId } = await runBatch({}, { tokenId: 'revoked' });
    assert.equal(outcome.status, 403);
    assert.match(outcome.errorMessage ?? '', /revoked/);
    assert.equal(calls.filter((c) => c.batchId === batchId && c.activity !== 'precheckAndFirstRound').length, 0, 'no node asked');
  });

  it('when the one local activity times out (a precheck that hangs), then nothing is applied on its word: the outcome is 500 and every node is told to revert', async function () {
    this.timeout(60_000);
    const { handle, outcome, callsOf } = await runBatch({}, { tokenId: 'hangs', deadlineMs: 100, goesOn: true });
    assert.equal(outcome.status, 500, JSON.stringify(outcome));
    assert.equal(callsOf('precheckAndFirstRound').length, 2, 'a hung attempt is tried once more, then given up');
    const summary = await handle.result();
    assert.deepEqual(Object.values(summary.nodes), ['reverted', 'reverted', 'reverted']);
    assert.equal(callsOf('revert').length, 3, 'what each node may have applied is reverted');
  });

  it('when a node refuses (non-2xx), then the outcome is 500 and the other nodes are told to revert the batch', async () => {
    const { handle, outcome, changes, callsOf } = await runBatch(
      {
        [NODES[1]]: {
          firstRound: (i) => ({
            status: 'failed',
            type: NodeFailure.rejected,
            message: `${i.node}: answered HTTP 500`,
            maybeApplied: false,
          }),
        },
      },
      { goesOn: true },
    );
    assert.equal(outcome.status, 500);
    const summary = await handle.result();
    assert.deepEqual(summary.nodes, { [NODES[0]]: 'reverted', [NODES[1]]: 'not-applied', [NODES[2]]: 'reverted' });
    const reverts = callsOf('revert');
    assert.deepEqual(reverts.map((r) => r.node).sort(), [NODES[0], NODES[2]]);
    for (const r of reverts)
      assert.deepEqual(
        r.changes,
        changes.filter((_, i) => NODES[i % 3] === r.node),
        "a revert names the batch's own changes; the node undoes them where nothing newer decided",
      );
  });

  it('when a node answers garbage (it may have applied), then the outcome is 500 and every node, that one too, is told to revert', async () => {
    const batch = await runBatch(
      {
        [NODES[2]]: {
          firstRound: (i) => ({
            status: 'failed',
            type: NodeFailure.badResponse,
            message: `${i.node}: answer is not JSON`,
            maybeApplied: true,
          }),
        },
      },
      { goesOn: true },
    );
    assert.equal(batch.outcome.status, 500);
    await assertAllReverted(batch);
  });

  it('when a node is late at the deadline, then the outcome is 408 with the confirmations of the other nodes in request order, and the late node is applied afterwards', async () => {
    const { changes, handle, answer, outcome, callsOf } = await runBatch({ [NODES[2]]: { firstRound: late } }, { goesOn: true });
    // The Update answers the nodes that applied in time; the API rebuilds the confirmations.
    assert.deepEqual(answer, {
      status: 408,
      errorMessage: "not a majority of every change's storage nodes answered within 5000 ms; the rest is being retried",
      appliedNodes: [NODES[0], NODES[1]],
    });
    assert.deepEqual(outcome.confirmations, changes.filter((_, i) => i % 3 !== 2).map(confirmationOfChecksummed));
    assert.deepEqual(Object.values((await handle.result()).nodes), ['applied', 'applied', 'applied']);
    assert.deepEqual(
      callsOf('applyToNode').map((c) => c.node),
      [NODES[2]],
    );
  });

  it("when a node's first-round answer has not one flag per change, then nothing is taken on its word: the outcome is 500 and everything is reverted", async () => {
    const batch = await runBatch(
      { [NODES[0]]: { firstRound: () => ({ status: 'applied', changed: [true], superseded: [false] }) } },
      { goesOn: true },
    );
    const { outcome } = batch;
    assert.equal(outcome.status, 500);
    assert.match(outcome.errorMessage ?? '', /http:\/\/node-1: the first round's answer has 1 flags for 2 changes/);
    await assertAllReverted(batch);
  });

  it('when the late node is down for 7 days after a 408, then Temporal retries it server side (one activity in the history, no event per attempt) and the batch converges once it is back', async () => {
    const downUntil = (await env.currentTimeMs()) + 7 * DAY;
    const { handle, outcome, workflowId, callsOf } = await runBatch(
      {
        [NODES[1]]: {
          firstRound: late,
          apply: (changes, _attempt, scheduledAt) => {
            if (scheduledAt < downUntil) throw refuse(NodeFailure.unreachable, `${NODES[1]} unreachable (ECONNREFUSED)`);
            return applied(changes);
          },
        },
      },
      { goesOn: true },
    );
    assert.equal(outcome.status, 408);
    const summary = await handle.result(); // skips time through every retry backoff
    assert.deepEqual(Object.values(summary.nodes), ['applied', 'applied', 'applied']);
    const attempts = callsOf('applyToNode');
    assert.ok(attempts.length > 100, `retried through the outage (${attempts.length} attempts)`);
    assert.ok(attempts.length < 2_200, `attempts settle at one per 5 minutes (${attempts.length})`);
    assert.ok((await env.currentTimeMs()) >= downUntil, 'converged only after the node came back');
    const types = await eventTypes(env, workflowId);
    assert.equal(types.filter((t) => t === 'ACTIVITY_TASK_SCHEDULED').length, 1, 'one activity, retried by the server');
    assert.ok(types.length < 40, `history stays bounded: ${types.length} events`);
  });
});
