import {
  ApplicationFailure,
  ParentClosePolicy,
  allHandlersFinished,
  condition,
  log,
  proxyActivities,
  setHandler,
  sleep,
  startChild,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../contracts/activities';
import {
  applyCancel,
  applyDeposit,
  applySubmit,
  callerWritesRecord,
  checkCancel,
  checkSubmit,
  depositRefusalReason,
  expire,
  FINAL_STATUSES,
  initialRecord,
  markReincluded,
  markReorged,
  expireUnsigned,
  refuteClaim,
  withSigningDeadline,
  holds,
  type Deposit,
  type DepositOutcome,
  type DepositTarget,
  type ExecutionRecord,
  type RefusedDeposit,
} from '../domain/execution-state';
import {
  ExecutionFailure,
  cancelExecutionUpdate,
  depositCompletedSignal,
  depositReorgedSignal,
  executionStatusKey,
  executionWebhooksWorkflowId,
  getExecutionQuery,
  recordDepositUpdate,
  submitSignatureUpdate,
  webhooksTaskQueue,
  type ExecutionWorkflowInput,
} from '../contracts/temporal';
import { CANCEL_REFUSALS, DEPOSIT_REFUSALS, SUBMIT_REFUSALS, refusalOf, type Refusals } from '../contracts/execution-commands';
import type { DepositProof } from '../domain/deposit-proof';
import { isBaseUnits } from '../domain/wei';
import { executionWebhooksWorkflow } from './execution-webhooks';
import { deliverWebhook, statusChangedDelivery } from './webhook-delivery';

// The read model write of a change nobody else writes (callerWritesRecord): retried until the
// database answers (it never fails the execution); the read model keeps the newest version. A
// regular activity, not a local one: a local activity holds the workflow task open while it runs,
// and with it the answer of the Update that made the change (docs/decisions/0051, 0073).
const { projectExecution } = proxyActivities<Activities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '5m' },
});
// The chain's word on a claimed deposit: retried for as long as the node does not answer (a claim
// is never dropped for want of an answer); see proveClaim for a claim the chain cannot show yet.
const { checkDeposit } = proxyActivities<Activities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '2s', backoffCoefficient: 2, maximumInterval: '1m' },
});
/**
 * How often a claim the chain cannot show yet (not deep enough, or a transaction the node has not
 * seen) is asked again, a minute or less apart (about half an hour in all), before it is recorded
 * as refuted (`unproven`): what a node still has not shown by then, nobody can prove.
 */
const PROOF_ROUNDS = 30;
/**
 * How long a finished execution waits for its webhooks after its read model is written. A receiver
 * slower than that gets the rest from executionWebhooksWorkflow, so that a receiver that is down
 * never keeps an execution open (and in the worker's cache) for the three days of its retries.
 */
const WEBHOOKS_WAIT = '1m';

/** The validators' answer to an Update that would change nothing; `answer` is what the API returns. */
const duplicate = (answer: unknown) =>
  ApplicationFailure.create({
    type: ExecutionFailure.duplicate,
    message: 'already applied; nothing changed',
    nonRetryable: true,
    details: [answer],
  });

/**
 * Throws the failure of a command's refusal (contracts/execution-commands.ts) when `outcome`, its
 * check's outcome, is one; `ok` and `duplicate` pass.
 */
function refuse(refusals: Refusals, outcome: string): void {
  const refusal = refusalOf(refusals, outcome);
  if (refusal === undefined) return;
  throw ApplicationFailure.create({
    type: refusal.failure,
    message: refusal.message,
    nonRetryable: true,
    ...(refusal.detail === undefined ? {} : { details: [refusal.detail] }),
  });
}

/**
 * One execution, from prepare to SIGNING, EXPIRED or CANCELLED. The record lives here and nowhere
 * else; every status change goes through the pure state machine of domain/execution-state and is
 * mirrored into the ExecutionState search attribute, the read model and, when configured, the
 * webhooks (deliverWebhook, in status order). The read model is written by whoever caused the
 * change: the API writes the record an Update answers (and the first one, at prepare); the
 * workflow writes (projectExecution) what signals and timers change, records that owe money back,
 * and every change when it has webhooks to send after them (decision 0073). Signatures arrive already verified
 * by the API (node:crypto cannot run in this sandbox); the workflow only decides what a verified
 * signature does.
 *
 * Commands come from two places, and each reads only its own state, so that the commands of a
 * workflow task never depend on which jobs the task holds. A status change (in a handler or the
 * expiry timer's callback) upserts the search attribute, starts the linger timer at a final status
 * and starts the read-model write of the new record: it reads the record only. An activity's completion
 * starts the next webhook: it reads only what completions have set (which read-model writes and webhooks
 * are done), never the record. The Temporal core may hand a replaying worker an activity's
 * completion in the same activation as the next Update while the original run saw them one
 * workflow task apart (a task that made no command is folded into the next); a handler that
 * looked at "is a webhook in flight" would then issue its commands in another order, and every
 * later task of the run would fail (decision 0069).
 */
export async function executionWorkflow(input: ExecutionWorkflowInput): Promise<ExecutionRecord> {
  let record = initialRecord(input);
  const now = () => new Date().toISOString();
  const { workflowId } = workflowInfo();

  // Handler state: the status changes so far, oldest first, for the webhooks.
  const events: Array<{ seq: number; record: ExecutionRecord }> = input.webhooks ? [{ seq: 1, record }] : [];
  let lingered = false;
  // Completion state: read-model writes still running, status changes whose write has landed
  // (a webhook goes out only after the read model shows its status), webhooks done, one in flight.
  let writesInFlight = 0;
  // Refusals past what the record keeps, for the next read-model write to put in the refunds ledger.
  let overflow: RefusedDeposit[] = [];
  let eventsWritten = 0;
  let sent = 0;
  let delivering = false;

  // Each status change once, in order, after its read-model write; a receiver gone for 72 hours is given up on.
  const deliver = (): void => {
    if (delivering || sent >= eventsWritten) return;
    delivering = true;
    const { seq, record: data } = events[sent];
    void deliverWebhook(statusChangedDelivery(workflowId, seq, data)).then(
      () => delivered(),
      (err: Error) => {
        log.warn('webhook given up after its retries', { workflowId, seq, status: data.status, error: err.message });
        delivered();
      },
    );
  };
  const delivered = (): void => {
    sent++;
    delivering = false;
    deliver();
  };
  // Every change is written, each by its own activity; the read model keeps the newest version,
  // whatever order the writes land in.
  const writeReadModel = (): void => {
    writesInFlight++;
    const eventsSoFar = events.length;
    const owed = overflow;
    overflow = [];
    void projectExecution({ workflowId, record, ...(owed.length > 0 ? { overflow: owed } : {}) }).then(() => {
      writesInFlight--;
      eventsWritten = Math.max(eventsWritten, eventsSoFar);
      deliver();
    });
  };
  // Stay answerable for a while after a final status: a client's retry of the same signature gets
  // 200, and a late deposit is recorded for refund instead of being lost.
  const linger = (): void => {
    if (input.lingerSeconds > 0) void sleep(input.lingerSeconds * 1000).then(() => (lingered = true));
    else lingered = true;
  };

  /** `byCaller`: made by an Update, whose caller writes the answer into the read model itself (callerWritesRecord). */
  const setRecord = (next: ExecutionRecord, byCaller = false) => {
    if (next === record) return;
    const changed = next.status !== record.status;
    record = next;
    if (changed) {
      upsertSearchAttributes([{ key: executionStatusKey, value: next.status }]);
      if (input.webhooks) events.push({ seq: next.history.length, record: next });
      if (FINAL_STATUSES.includes(next.status)) linger();
    }
    if (!byCaller || input.webhooks || !callerWritesRecord(next)) writeReadModel();
  };

  // OPERATION_PENDING waits for its signature until its deadline, then it is EXPIRED and its
  // deposit owed back: no execution stays open (and in the worker's cache) for ever. One timer at
  // a time: the expiry timer, when it fires on an OPERATION_PENDING execution, starts the one for
  // the rest of the signing deadline; a deadline earlier than the expiry gets its own timer at the
  // deposit. An execution signed before its expiry (the usual case) starts one timer in all.
  const expireIfUnsigned = () => {
    if (record.status === 'OPERATION_PENDING') setRecord(expireUnsigned(record, now()));
  };
  const wakeAtSigningDeadline = () => {
    if (record.status !== 'OPERATION_PENDING' || record.signingDeadline === undefined) return;
    const ms = Date.parse(record.signingDeadline) - Date.now();
    if (ms > 0) void sleep(ms).then(expireIfUnsigned);
    else expireIfUnsigned();
  };
  const deposit = (d: Deposit, byCaller = false) => {
    const { record: applied, outcome, overflow: owed } = applyDeposit(record, d, now());
    if (owed) {
      overflow.push(owed);
      writeReadModel();
    }
    const deadlineS = input.signingDeadlineSeconds;
    const armed = deadlineS !== undefined && applied.status === 'OPERATION_PENDING' && record.status === 'PREPARED';
    setRecord(armed ? withSigningDeadline(applied, new Date(Date.now() + deadlineS * 1000).toISOString()) : applied, byCaller);
    if (armed && Date.now() + deadlineS * 1000 < Date.parse(input.expiresAt)) wakeAtSigningDeadline();
    return outcome;
  };

  setHandler(getExecutionQuery, () => record);

  // A claim to an on-chain target, proven by the chain: asked again while the chain cannot show it
  // yet (PROOF_ROUNDS), durably (timers), so a worker crash or a slow node loses no deposit.
  const proveClaim = async (target: DepositTarget, d: Deposit): Promise<DepositProof> => {
    for (let round = 1; ; round++) {
      const proof = await checkDeposit({ target, deposit: d });
      if (proof.ok || !proof.retryable || round >= PROOF_ROUNDS) return proof;
      await sleep(Math.min(60_000, 2_000 * 2 ** (round - 1)));
    }
  };

  // A signal cannot answer: a refused deposit is still owed back (refusedDeposits, the refunds
  // ledger). To an on-chain target a signal is only a claim: the chain must show the transfer
  // (decision 0071), and the deposit stored is what the chain says, not what the signal said. A
  // claim the chain refutes is recorded on the execution (refutedClaims), never owed: no money came.
  setHandler(depositCompletedSignal, async (d) => {
    // Money owed is counted in base units: a claim of any other spelling is no deposit.
    if (d.amount !== undefined && !isBaseUnits(d.amount)) {
      log.warn('deposit signal not believed: its amount is not base units', { workflowId, txHash: d.txHash });
      setRecord(refuteClaim(record, d, 'amount-not-base-units', now()));
      return;
    }
    const target = record.depositTarget;
    if (!target) {
      deposit(d);
      return;
    }
    // Held already and not reorganised away: nothing to prove.
    if (holds(record, d)) return;
    const proof = await proveClaim(target, d);
    if (proof.ok) {
      deposit(proof.deposit);
      // Mined again after a reorganisation: the mark goes.
      setRecord(markReincluded(record, proof.deposit, now()));
    } else {
      log.warn('deposit signal not believed: the chain does not show it', { workflowId, txHash: d.txHash, reason: proof.message });
      setRecord(refuteClaim(record, d, proof.retryable ? 'unproven' : proof.reason, now()));
    }
  });

  // Someone says a deposit's block was reorganised away: believed only when the chain no longer
  // shows the transfer at depth. Marked for an operator (a SIGNING execution is then signing with
  // no money behind it); the status stays.
  setHandler(depositReorgedSignal, async (r) => {
    const target = record.depositTarget;
    if (target) {
      const proof = await checkDeposit({
        target,
        deposit: { txHash: r.txHash, chain: r.chain, transferIndex: r.transferIndex, ...(r.asset ? { asset: r.asset } : {}) },
      });
      if (proof.ok) {
        log.warn('depositReorged not believed: the chain still shows the transfer at depth', { workflowId, ...r });
        return;
      }
    }
    const next = markReorged(record, r, now());
    if (next !== record) log.error('deposit reorganised away after it was signalled', { workflowId, ...r });
    setRecord(next);
  });

  const refuseDeposit = (outcome: DepositOutcome): void => {
    const reason = depositRefusalReason(outcome);
    if (reason !== undefined) refuse(DEPOSIT_REFUSALS, reason);
  };

  setHandler(
    recordDepositUpdate,
    (d) => {
      refuseDeposit(deposit(d, true));
      return record;
    },
    {
      // A deposit that would change nothing (its txHash is stored, or already recorded as refused)
      // is answered here: a validator's rejection writes nothing to the history.
      validator: (d) => {
        const { record: next, outcome, overflow: owed } = applyDeposit(record, d, now());
        if (next !== record || owed) return;
        refuseDeposit(outcome);
        throw duplicate(record);
      },
    },
  );

  setHandler(
    submitSignatureUpdate,
    ({ payload, signingMessage }) => {
      setRecord(applySubmit(record, payload, signingMessage, now()), true);
      return { status: record.status, record };
    },
    {
      // Rejections here leave no trace in the history, so a client hammering a conflict, or replaying
      // an accepted submit, costs nothing durable.
      validator: ({ payload }) => {
        const check = checkSubmit(record, payload.signature);
        refuse(SUBMIT_REFUSALS, check);
        if (check === 'duplicate') throw duplicate({ status: record.status, record });
      },
    },
  );

  setHandler(
    cancelExecutionUpdate,
    (args) => {
      setRecord(applyCancel(record, now()), true);
      log.info('execution cancelled', { workflowId, requestedBy: args?.requestedBy });
      return record;
    },
    {
      // Already CANCELLED is answered here as a duplicate (nothing written); SIGNING and EXPIRED are refused.
      validator: (_args) => {
        const check = checkCancel(record);
        if (check === 'duplicate') throw duplicate(record);
        refuse(CANCEL_REFUSALS, check);
      },
    },
  );

  // Left PREPARED before expiry by a deposit or a cancel, or EXPIRED when the timer fires; still
  // waiting for its signature then, the execution waits on until its signing deadline. The timer is
  // not cancelled when the execution moves on: firing, it finds nothing to do.
  const msUntilExpiry = Date.parse(input.expiresAt) - Date.now();
  const atExpiry = () => {
    if (record.status === 'PREPARED') setRecord(expire(record, now()));
    else wakeAtSigningDeadline();
  };
  if (msUntilExpiry > 0) void sleep(msUntilExpiry).then(atExpiry);
  else atExpiry();
  // The first record is the API's to write (it prepared it); with webhooks, its own write comes first.
  if (input.webhooks) writeReadModel();

  // A deposited execution waits for its signature until its signing deadline (OPERATION_PENDING is
  // not final). At a final status the workflow closes once the read model holds its last record (the
  // API answers a closed execution from it) and no handler is still running; its webhooks get
  // WEBHOOKS_WAIT more, then whatever is left goes to a workflow of its own. A closed execution
  // leaves the worker's cache for good (decision 0074).
  const settled = () => lingered && writesInFlight === 0 && allHandlersFinished();
  await condition(settled);
  if (sent < events.length && !(await condition(() => sent >= events.length, WEBHOOKS_WAIT))) {
    // On the webhooks queue: a receiver that stays down keeps this child open for days, which must
    // not take an execution's place (decision 0089).
    await startChild(executionWebhooksWorkflow, {
      workflowId: executionWebhooksWorkflowId(workflowId),
      taskQueue: webhooksTaskQueue(workflowInfo().taskQueue),
      args: [
        { executionWorkflowId: workflowId, deliveries: events.slice(sent).map((e) => statusChangedDelivery(workflowId, e.seq, e.record)) },
      ],
      parentClosePolicy: ParentClosePolicy.ABANDON,
    });
    log.warn('webhooks handed over: the receiver did not take them in time', { workflowId, pending: events.length - sent });
  }
  // A late deposit taken while the webhooks were awaited is written to the read model before the close.
  await condition(settled);
  return record;
}
