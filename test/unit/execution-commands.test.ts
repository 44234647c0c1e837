import assert from 'node:assert/strict';
import { CANCEL_REFUSALS, DEPOSIT_REFUSALS, SUBMIT_REFUSALS, refusalOf, refusalOfFailure } from '../../contracts/execution-commands';
import { ExecutionFailure } from '../../contracts/temporal';
import { ServiceError } from '../../domain/errors';
import {
  applyCancel,
  applyDeposit,
  applySubmit,
  checkCancel,
  checkSubmit,
  closedDepositRefusal,
  depositRefusalReason,
  expire,
  initialRecord,
  type DepositOutcome,
  type ExecutionRecord,
} from '../../domain/execution-state';
import { judged } from '../../api/executions/run-command';

const T0 = '2025-01-01T00:00:00.000Z';
const T1 = '2025-01-01T00:01:00.000Z';
const SIG = '0x' + 'a1'.repeat(64);

const prepared = (): ExecutionRecord =>
  initialRecord({
    executionId: 'ex-1',
    wallet: 'w',
    intent: {},
    intentHash: 'h',
    signerPublicKey: '0x' + '11'.repeat(32),
    createdAt: T0,
    expiresAt: '2025-01-01T01:00:00.000Z',
  });
const payload = (signature = SIG) => ({
  signature,
  publicKey: '0x' + '11'.repeat(32),
  connectEnvelope: { address: 'w', domain: 'd', timestamp: 1 },
  submittedAt: T1,
});

describe('contracts/execution-commands: each command refused in one place', () => {
  // The words are what clients and the workflow's failures carry today: a change here is a change of the HTTP answers.
  it('when a submit is refused, then the failure type, message, status and code are the ones the workflow and the API have always used', () => {
    assert.deepEqual(SUBMIT_REFUSALS, {
      expired: { failure: 'ExecutionExpired', message: 'execution is EXPIRED', status: 409, code: 'EXPIRED' },
      cancelled: { failure: 'ExecutionCancelled', message: 'execution is CANCELLED', status: 409, code: 'CANCELLED' },
      'other-signature': {
        failure: 'SignatureConflict',
        message: 'execution already holds a different signature',
        status: 409,
        code: 'SIGNATURE_CONFLICT',
      },
    });
  });

  it('when a cancel is refused, then the message names the status and the failure carries it as its detail', () => {
    for (const status of ['SIGNING', 'EXPIRED'] as const) {
      const refusal = CANCEL_REFUSALS[status === 'SIGNING' ? 'signing' : 'expired'];
      assert.deepEqual(refusal, {
        failure: ExecutionFailure.cancelRefused,
        message: `execution is ${status} and can no longer be cancelled`,
        detail: status,
        status: 409,
        code: 'CANCEL_REFUSED',
      });
    }
  });

  it('when a deposit is refused for any reason, then it is 409 DEPOSIT_REFUSED and the words say it was recorded for refund', () => {
    const reasons = ['expired', 'other-tx', 'cancelled', 'below-minimum', 'wrong-chain', 'wrong-asset', 'closed'];
    assert.deepEqual(Object.keys(DEPOSIT_REFUSALS).sort(), [...reasons].sort());
    for (const refusal of Object.values(DEPOSIT_REFUSALS)) {
      assert.equal(refusal.failure, ExecutionFailure.depositRefused);
      assert.equal(refusal.code, 'DEPOSIT_REFUSED');
      assert.match(refusal.message, /recorded for refund$/);
    }
    assert.equal(DEPOSIT_REFUSALS.closed.message, 'execution is closed; the deposit was recorded for refund');
    assert.equal(DEPOSIT_REFUSALS.cancelled.message, 'execution is CANCELLED; the deposit was recorded for refund');
  });

  it("when the domain's checks refuse, then every refusal has its entry, and ok and duplicate have none", () => {
    const rec = prepared();
    const signed = applySubmit(rec, payload(), 'm', T1);
    const expired = expire(rec, T1);
    const cancelled = applyCancel(rec, T1);
    const signing = applySubmit(applyDeposit(rec, { txHash: '0x1' }, T1).record, payload(), 'm', T1);
    const submits = [
      checkSubmit(rec, SIG),
      checkSubmit(signed, SIG),
      checkSubmit(signed, '0xother'),
      checkSubmit(expired, SIG),
      checkSubmit(cancelled, SIG),
    ];
    assert.deepEqual(submits, ['ok', 'duplicate', 'other-signature', 'expired', 'cancelled']);
    assert.deepEqual(
      submits.map((c) => refusalOf(SUBMIT_REFUSALS, c)?.code),
      [undefined, undefined, 'SIGNATURE_CONFLICT', 'EXPIRED', 'CANCELLED'],
    );
    const cancels = [checkCancel(rec), checkCancel(cancelled), checkCancel(signing), checkCancel(expired)];
    assert.deepEqual(
      cancels.map((c) => refusalOf(CANCEL_REFUSALS, c)?.message),
      [undefined, undefined, 'execution is SIGNING and can no longer be cancelled', 'execution is EXPIRED and can no longer be cancelled'],
    );
    assert.equal(refusalOf(SUBMIT_REFUSALS, 'toString'), undefined, 'only the table’s own outcomes');
  });

  it('when a deposit outcome is a refusal, then its reason is the one closedDepositRefusal gives a closed record', () => {
    const outcomes: DepositOutcome[] = ['applied', 'duplicate', 'refused-expired', 'refused-other-tx', 'refused-wrong-asset'];
    assert.deepEqual(outcomes.map(depositRefusalReason), [undefined, undefined, 'expired', 'other-tx', 'wrong-asset']);
    assert.equal(closedDepositRefusal(expire(prepared(), T1), { txHash: '0x1' }, T1), 'expired');
    assert.equal(closedDepositRefusal(prepared(), { txHash: '0x1' }, T1), 'closed');
  });

  it('when the workflow refused an Update, then the API answers with the status and code of its type, in the words it sent', () => {
    const message = 'execution is SIGNING and can no longer be cancelled';
    assert.deepEqual(refusalOfFailure(CANCEL_REFUSALS, { type: 'CancelRefused', message }), { ...CANCEL_REFUSALS.signing, message });
    assert.equal(refusalOfFailure(CANCEL_REFUSALS, { type: 'DuplicateUpdate', message: 'x' }), undefined);
    assert.equal(refusalOfFailure(SUBMIT_REFUSALS, { message: 'no type' }), undefined);
    const deposit = refusalOfFailure(DEPOSIT_REFUSALS, { type: 'DepositRefused', message: DEPOSIT_REFUSALS['wrong-chain'].message });
    assert.equal(deposit?.code, 'DEPOSIT_REFUSED');
    assert.equal(deposit?.message, DEPOSIT_REFUSALS['wrong-chain'].message);
  });

  it('when the API judges a command on a record, then a duplicate is the given answer, ok is undefined and a refusal throws its 409', () => {
    assert.equal(judged(SUBMIT_REFUSALS, 'duplicate', 'answer'), 'answer');
    assert.equal(judged(SUBMIT_REFUSALS, 'ok', 'answer'), undefined);
    assert.throws(
      () => judged(SUBMIT_REFUSALS, 'expired', 'answer'),
      (e: unknown) => e instanceof ServiceError && e.status === 409 && e.code === 'EXPIRED' && e.message === 'execution is EXPIRED',
    );
  });
});
