import {
  isRetryableNodeFailure,
  mayHaveApplied,
  NodeFailure,
  type FirstRoundNodeInput,
  type FirstRoundNodeResult,
} from '../contracts/temporal';
import type { ChangeResult } from '../domain/whitelist-messages';
import type { NodeApplyRequest } from '../contracts/activities';
import { failureFacts } from '../domain/failure-facts';

const notWrapped = (_: unknown): _ is Error => false;

/** What a failed request says; without a type (a timeout, a broken connection) it may have been applied. */
function failureOf(err: unknown): { type: string; message: string } {
  const { type, message } = failureFacts(err, notWrapped);
  return { type: type ?? NodeFailure.timeout, message };
}

/**
 * A batch's first tries at one node, before the HTTP answer: up to `attempts` requests with a
 * backoff, none running or waited for past `deadlineAt`. It answers instead of throwing, so the
 * workflow learns what every failed attempt implies (whether the node may have applied the batch)
 * and not only the last one. Runs as a local activity: no task queue hop, no extra workflow task.
 */
export async function applyFirstRound(
  input: FirstRoundNodeInput,
  options: { requestTimeoutMs: number; post: (request: NodeApplyRequest, timeoutMs: number) => Promise<ChangeResult[]> },
): Promise<FirstRoundNodeResult> {
  let maybeApplied = false;
  let last = `${input.node}: no attempt before the deadline`;
  for (let attempt = 1; attempt <= input.attempts; attempt++) {
    const remainingMs = input.deadlineAt - Date.now();
    if (remainingMs <= 0) break;
    try {
      const results = await options.post(input, Math.min(options.requestTimeoutMs, remainingMs));
      // post checked each result against its change: the flags are all the answer adds (decision 0017).
      return { status: 'applied', changed: results.map((r) => r.changed), superseded: results.map((r) => r.superseded) };
    } catch (err) {
      const { type, message } = failureOf(err);
      if (mayHaveApplied(type)) maybeApplied = true;
      last = `${input.node}: ${message}`;
      const pastDeadline = Date.now() >= input.deadlineAt;
      if (type === NodeFailure.timeout && pastDeadline) break;
      if (!isRetryableNodeFailure(type) || attempt === input.attempts) return { status: 'failed', type, message: last, maybeApplied };
      const backoffMs = input.backoffMs * 2 ** (attempt - 1);
      if (Date.now() + backoffMs >= input.deadlineAt) break;
      await new Promise((resolve) => setTimeout(resolve, backoffMs));
    }
  }
  // Out of time, not out of attempts: the batch answers 408 and the node is retried afterwards.
  // Whatever an earlier run of this activity (a worker that died mid-task) sent may have landed.
  return { status: 'late', message: last, maybeApplied: true };
}
