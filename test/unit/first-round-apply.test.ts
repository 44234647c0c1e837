import assert from 'node:assert/strict';
import { ApplicationFailure } from '@temporalio/common';
import { applyFirstRound } from '../../activities/first-round-apply';
import type { ChangeResult } from '../../domain/whitelist-messages';
import { NodeFailure, type FirstRoundNodeInput } from '../../contracts/temporal';

const change = { op_type: 'add_entry', kind: 'user', entry: '0x52908400098527886E0F7030069857D2E4169EE7' } as const;
const applied: ChangeResult[] = [{ ...change, changed: true, superseded: false }];

function input(overrides: Partial<FirstRoundNodeInput> = {}): FirstRoundNodeInput {
  return {
    node: 'http://node-a',
    batchId: 'b1',
    position: 1,
    tokenId: 't',
    changes: [change],
    indexes: [0],
    deadlineAt: Date.now() + 2000,
    attempts: 3,
    backoffMs: 10,
    ...overrides,
  };
}

/** A node that answers with these outcomes in turn (an ApplicationFailure type, or 'ok'), recording each call's timeout. */
function node(...answers: string[]) {
  const timeouts: number[] = [];
  const post = async (_request: unknown, timeoutMs: number) => {
    timeouts.push(timeoutMs);
    const answer = answers[Math.min(timeouts.length - 1, answers.length - 1)];
    if (answer === 'ok') return applied;
    if (answer === 'hang')
      return new Promise<ChangeResult[]>((_, reject) =>
        setTimeout(() => reject(ApplicationFailure.create({ type: NodeFailure.timeout, message: 'no answer' })), timeoutMs),
      );
    throw ApplicationFailure.create({ type: answer, message: `failed with ${answer}` });
  };
  return { post, timeouts };
}

describe('unit: the first round at one node (applyFirstRound)', () => {
  it("when the node answers, then each change's changed flag comes back (in the share's order) after one request", async () => {
    const n = node('ok');
    assert.deepEqual(await applyFirstRound(input(), { requestTimeoutMs: 10_000, post: n.post }), {
      status: 'applied',
      changed: applied.map((r) => r.changed),
      superseded: applied.map((r) => r.superseded),
    });
    assert.equal(n.timeouts.length, 1);
  });

  it('when the node is unreachable twice and then answers, then it is applied after three requests', async () => {
    const n = node(NodeFailure.unreachable, NodeFailure.unreachable, 'ok');
    assert.equal((await applyFirstRound(input(), { requestTimeoutMs: 10_000, post: n.post })).status, 'applied');
    assert.equal(n.timeouts.length, 3);
  });

  it('when the node stays unreachable, then it fails after the attempts, and nothing may have been applied', async () => {
    const n = node(NodeFailure.unreachable);
    const answer = await applyFirstRound(input(), { requestTimeoutMs: 10_000, post: n.post });
    assert.deepEqual(answer, {
      status: 'failed',
      type: NodeFailure.unreachable,
      message: 'http://node-a: failed with NodeUnreachable',
      maybeApplied: false,
    });
    assert.equal(n.timeouts.length, 3);
  });

  it('when an attempt timed out before the node became unreachable, then the failure says the batch may have been applied', async () => {
    const n = node(NodeFailure.timeout, NodeFailure.unreachable);
    const answer = await applyFirstRound(input(), { requestTimeoutMs: 5, post: n.post });
    assert.equal(answer.status, 'failed');
    assert.equal(answer.status === 'failed' && answer.maybeApplied, true);
  });

  for (const type of [NodeFailure.rejected, NodeFailure.badResponse]) {
    it(`when the node's answer is ${type}, then it fails at once (no retry), maybe applied: ${type === NodeFailure.badResponse}`, async () => {
      const n = node(type, 'ok');
      const answer = await applyFirstRound(input(), { requestTimeoutMs: 10_000, post: n.post });
      assert.deepEqual(answer, {
        status: 'failed',
        type,
        message: `http://node-a: failed with ${type}`,
        maybeApplied: type === NodeFailure.badResponse,
      });
      assert.equal(n.timeouts.length, 1);
    });
  }

  it('when the node does not answer by the deadline, then the request is cut at the deadline and the node is late (maybe applied)', async () => {
    const n = node('hang');
    const started = Date.now();
    const answer = await applyFirstRound(input({ deadlineAt: started + 150 }), { requestTimeoutMs: 10_000, post: n.post });
    assert.equal(answer.status, 'late');
    assert.equal(answer.status === 'late' && answer.maybeApplied, true);
    assert.equal(n.timeouts.length, 1);
    assert.ok(n.timeouts[0] <= 150, `request timeout ${n.timeouts[0]} ms is bounded by the deadline`);
    assert.ok(Date.now() - started < 1000);
  });

  it('when the deadline has passed already (a retried workflow task), then no request is sent and the node is late', async () => {
    const n = node('ok');
    const answer = await applyFirstRound(input({ deadlineAt: Date.now() - 1 }), { requestTimeoutMs: 10_000, post: n.post });
    assert.equal(answer.status, 'late');
    assert.equal(n.timeouts.length, 0);
  });

  it('when the backoff before the next attempt would pass the deadline, then it stops and the node is late, not failed', async () => {
    const n = node(NodeFailure.unreachable);
    const answer = await applyFirstRound(input({ deadlineAt: Date.now() + 50, backoffMs: 200 }), {
      requestTimeoutMs: 10_000,
      post: n.post,
    });
    assert.equal(answer.status, 'late');
    assert.equal(n.timeouts.length, 1);
  });
});
