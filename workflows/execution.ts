import { ApplicationFailure, allHandlersFinished, condition, patched, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import {
  applyDeposit,
  applySubmit,
  checkSubmit,
  expire,
  initialRecord,
  type Deposit,
  type DepositOutcome,
  type ExecutionRecord,
} from '../domain/execution-state';
import {
  ExecutionFailure,
  depositCompletedSignal,
  executionStatusKey,
  getExecutionQuery,
  recordDepositUpdate,
  submitSignatureUpdate,
  type ExecutionWorkflowInput,
} from './definitions';

/** The validators' answer to an Update that would change nothing; `answer` is what the API returns. */
const duplicate = (answer: unknown) =>
  ApplicationFailure.create({
    type: ExecutionFailure.duplicate,
    message: 'already applied; nothing changed',
    nonRetryable: true,
    details: [answer],
  });

/**
 * One execution, from prepare to SIGNING or EXPIRED. The record lives here and nowhere else; every
 * status change goes through the pure state machine of domain/execution-state and is mirrored into
 * the ExecutionState search attribute. Signatures arrive already verified by the API (node:crypto
 * cannot run in this sandbox); the workflow only decides what a verified signature does.
 */
export async function executionWorkflow(input: ExecutionWorkflowInput): Promise<ExecutionRecord> {
  let record = initialRecord(input);
  const now = () => new Date().toISOString();

  const setRecord = (next: ExecutionRecord) => {
    if (next.status !== record.status) upsertSearchAttributes([{ key: executionStatusKey, value: next.status }]);
    record = next;
  };

  const deposit = (d: Deposit) => {
    const { record: next, outcome } = applyDeposit(record, d, now());
    setRecord(next);
    return outcome;
  };

  setHandler(getExecutionQuery, () => record);

  // A signal cannot answer: a refused deposit is still recorded (refusedDeposits) for an operator to refund.
  setHandler(depositCompletedSignal, (d) => {
    deposit(d);
  });

  const refuseDeposit = (outcome: DepositOutcome): void => {
    if (outcome === 'refused-expired') {
      throw ApplicationFailure.create({
        type: ExecutionFailure.depositRefused,
        message: 'execution is EXPIRED; the deposit was recorded for refund',
        nonRetryable: true,
      });
    }
    if (outcome === 'refused-other-tx') {
      throw ApplicationFailure.create({
        type: ExecutionFailure.depositRefused,
        message: 'execution already has a deposit with another txHash; this one was recorded for refund',
        nonRetryable: true,
      });
    }
  };

  setHandler(
    recordDepositUpdate,
    (d) => {
      refuseDeposit(deposit(d));
      return record;
    },
    {
      // A deposit that would change nothing (its txHash is stored, or already recorded as refused)
      // is answered here: a validator's rejection writes nothing to the history.
      validator: (d) => {
        const { record: next, outcome } = applyDeposit(record, d, now());
        if (next !== record) return;
        refuseDeposit(outcome);
        throw duplicate(record);
      },
    },
  );

  setHandler(
    submitSignatureUpdate,
    ({ payload, signingMessage }) => {
      setRecord(applySubmit(record, payload, signingMessage, now()));
      return { status: record.status };
    },
    {
      // Rejections here leave no trace in the history, so a client hammering a conflict, or replaying
      // an accepted submit, costs nothing durable.
      validator: ({ payload }) => {
        const check = checkSubmit(record, payload.signature);
        if (check === 'expired') {
          throw ApplicationFailure.create({ type: ExecutionFailure.expired, message: 'execution is EXPIRED', nonRetryable: true });
        }
        if (check === 'other-signature') {
          throw ApplicationFailure.create({
            type: ExecutionFailure.signatureConflict,
            message: 'execution already holds a different signature',
            nonRetryable: true,
          });
        }
        if (check === 'duplicate') throw duplicate({ status: record.status });
      },
    },
  );

  const msUntilExpiry = Date.parse(input.expiresAt) - Date.now();
  const depositArrived = msUntilExpiry > 0 && (await condition(() => record.status !== 'PREPARED', msUntilExpiry));
  if (!depositArrived && record.status === 'PREPARED') setRecord(expire(record, now()));
  // A deposited execution waits for its signature as long as it takes: the deposit is in, so it
  // must not close under a client that signs late. (Patched: the first version started lingering
  // at OPERATION_PENDING; its histories still replay.)
  if (patched('wait-for-signing-before-linger')) await condition(() => record.status !== 'OPERATION_PENDING');

  // Stay answerable for a while: a client's retry of the same signature gets 200, and a late deposit
  // is recorded for refund instead of being lost. Then close, after any handler still running.
  if (input.lingerSeconds > 0) await condition(() => false, input.lingerSeconds * 1000);
  await condition(allHandlersFinished);
  return record;
}
