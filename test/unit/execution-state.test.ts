import assert from 'node:assert/strict';
import {
  FINAL_STATUSES,
  applyCancel,
  applyDeposit,
  checkCancel,
  closedDepositRefusal,
  recordVersion,
  applySubmit,
  checkSubmit,
  expire,
  initialRecord,
  holds,
  markReincluded,
  markReorged,
  MAX_REFUTED_IN_RECORD,
  refuteClaim,
  type ExecutionRecord,
  type SignedPayload,
} from '../../domain/execution-state';

const T0 = '2025-01-01T00:00:00.000Z';
const T1 = '2025-01-01T00:01:00.000Z';
const T2 = '2025-01-01T00:02:00.000Z';
const T3 = '2025-01-01T00:03:00.000Z';
const EXPIRES = '2025-01-01T01:00:00.000Z';

const SIG_A = '0x' + 'a1'.repeat(64);
const SIG_B = '0x' + 'b2'.repeat(64);

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

/** Records are frozen so that any mutation by the functions under test throws. */
function prepared(): ExecutionRecord {
  return deepFreeze(
    initialRecord({
      executionId: 'exec-1',
      wallet: 'wallet-1',
      intent: { action: 'swap', amount: '1.5' },
      intentHash: 'ab'.repeat(32),
      signerPublicKey: '0x' + 'cd'.repeat(32),
      createdAt: T0,
      expiresAt: EXPIRES,
    }),
  );
}

function payload(signature = SIG_A, submittedAt = T1): SignedPayload {
  return {
    signature,
    publicKey: '0x' + 'cd'.repeat(32),
    connectEnvelope: { address: 'wallet-1', domain: 'localhost', timestamp: 1735689660 },
    submittedAt,
  };
}

const deposit = { txHash: '0xtx1', chain: 'solana', amount: '10' };
/** What applySubmit and applyCancel throw when their check refuses: a bug of the caller, never an HTTP answer (contracts/execution-commands.ts answers). */
const isRefusedApply = (e: unknown) => e instanceof Error && / refuses this (submit|cancel) /.test(e.message);

describe('domain/execution-state', () => {
  describe('transition table of docs/architecture.md', () => {
    it('when an execution is prepared, then it is PREPARED with intent, signer key and expiry stored', () => {
      const rec = prepared();
      assert.deepEqual(rec, {
        executionId: 'exec-1',
        wallet: 'wallet-1',
        status: 'PREPARED',
        intent: { action: 'swap', amount: '1.5' },
        intentHash: 'ab'.repeat(32),
        signerPublicKey: '0x' + 'cd'.repeat(32),
        createdAt: T0,
        updatedAt: T0,
        expiresAt: EXPIRES,
        history: [{ status: 'PREPARED', at: T0 }],
        refusedDeposits: [],
      });
    });

    it('when a deposit completes on PREPARED with no signature, then it moves to OPERATION_PENDING with the deposit stored', () => {
      const { record, outcome } = applyDeposit(prepared(), deposit, T1);
      assert.equal(outcome, 'applied');
      assert.equal(record.status, 'OPERATION_PENDING');
      assert.deepEqual(record.deposit, deposit);
      assert.equal(record.updatedAt, T1);
      assert.deepEqual(record.history, [
        { status: 'PREPARED', at: T0 },
        { status: 'OPERATION_PENDING', at: T1 },
      ]);
    });

    it('when a deposit completes on PREPARED with a signature stored, then it moves to SIGNING through OPERATION_PENDING', () => {
      const signed = deepFreeze(applySubmit(prepared(), payload(), 'message', T1));
      const { record, outcome } = applyDeposit(signed, deposit, T2);
      assert.equal(outcome, 'applied');
      assert.equal(record.status, 'SIGNING');
      assert.deepEqual(record.deposit, deposit);
      assert.deepEqual(record.signedPayload, payload());
      assert.deepEqual(record.history, [
        { status: 'PREPARED', at: T0 },
        { status: 'OPERATION_PENDING', at: T2 },
        { status: 'SIGNING', at: T2 },
      ]);
    });

    it('when a valid submit arrives on PREPARED, then it stays PREPARED with the payload and message stored', () => {
      const rec = prepared();
      assert.equal(checkSubmit(rec, SIG_A), 'ok');
      const next = applySubmit(rec, payload(), 'the signed text', T1);
      assert.equal(next.status, 'PREPARED');
      assert.deepEqual(next.signedPayload, payload());
      assert.equal(next.signingMessage, 'the signed text');
      assert.equal(next.updatedAt, T1);
      assert.deepEqual(next.history, [{ status: 'PREPARED', at: T0 }], 'no status change, no history entry');
    });

    it('when a valid submit arrives on OPERATION_PENDING, then it moves to SIGNING with the payload stored', () => {
      const pending = deepFreeze(applyDeposit(prepared(), deposit, T1).record);
      assert.equal(checkSubmit(pending, SIG_A), 'ok');
      const next = applySubmit(pending, payload(SIG_A, T2), 'msg', T2);
      assert.equal(next.status, 'SIGNING');
      assert.deepEqual(next.signedPayload, payload(SIG_A, T2));
      assert.deepEqual(next.deposit, deposit);
      assert.deepEqual(
        next.history.map((h) => h.status),
        ['PREPARED', 'OPERATION_PENDING', 'SIGNING'],
      );
      assert.equal(next.history[2].at, T2);
    });

    it('when the expiry timer fires on PREPARED, then it becomes EXPIRED with nothing else changed', () => {
      const rec = prepared();
      const next = expire(rec, EXPIRES);
      assert.equal(next.status, 'EXPIRED');
      assert.deepEqual(next.history, [
        { status: 'PREPARED', at: T0 },
        { status: 'EXPIRED', at: EXPIRES },
      ]);
      assert.deepEqual({ ...next, status: rec.status, history: rec.history, updatedAt: rec.updatedAt }, rec);
    });

    it('when a signed but unfunded execution expires, then it becomes EXPIRED and keeps its payload', () => {
      const signed = deepFreeze(applySubmit(prepared(), payload(), 'm', T1));
      const next = expire(signed, EXPIRES);
      assert.equal(next.status, 'EXPIRED');
      assert.deepEqual(next.signedPayload, payload());
    });
  });

  describe('duplicates and refusals', () => {
    it('when the same txHash arrives again, then the outcome is duplicate and the record is the same object', () => {
      const pending = deepFreeze(applyDeposit(prepared(), deposit, T1).record);
      const again = applyDeposit(pending, { txHash: deposit.txHash }, T2);
      assert.equal(again.outcome, 'duplicate');
      assert.equal(again.record, pending);
      const signing = deepFreeze(applySubmit(pending, payload(), 'm', T2));
      assert.equal(applyDeposit(signing, deposit, T3).outcome, 'duplicate');
      assert.equal(applyDeposit(signing, deposit, T3).record, signing);
    });

    it('when another txHash arrives after a deposit, then it is refused, recorded once for a refund, and the status is kept', () => {
      const pending = deepFreeze(applyDeposit(prepared(), deposit, T1).record);
      const other = { txHash: '0xtx2', amount: '3' };
      const first = applyDeposit(pending, other, T2);
      assert.equal(first.outcome, 'refused-other-tx');
      assert.equal(first.record.status, 'OPERATION_PENDING');
      assert.deepEqual(first.record.deposit, deposit);
      assert.deepEqual(first.record.refusedDeposits, [{ txHash: '0xtx2', amount: '3', at: T2, reason: 'other-tx' }]);
      assert.equal(first.record.history.length, pending.history.length);
      const second = applyDeposit(deepFreeze(first.record), other, T3);
      assert.equal(second.outcome, 'refused-other-tx');
      assert.equal(second.record, first.record, 'the same refused txHash is not recorded twice');
    });

    it('when a deposit arrives on SIGNING with another txHash, then it is refused as other-tx', () => {
      const signing = deepFreeze(applySubmit(applyDeposit(prepared(), deposit, T1).record, payload(), 'm', T2));
      const { record, outcome } = applyDeposit(signing, { txHash: '0xtx9' }, T3);
      assert.equal(outcome, 'refused-other-tx');
      assert.equal(record.status, 'SIGNING');
      assert.deepEqual(record.refusedDeposits, [{ txHash: '0xtx9', at: T3, reason: 'other-tx' }]);
    });

    it('when a deposit arrives on EXPIRED, then it is refused as expired and recorded for a refund', () => {
      const expired = deepFreeze(expire(prepared(), EXPIRES));
      const { record, outcome } = applyDeposit(expired, deposit, T3);
      assert.equal(outcome, 'refused-expired');
      assert.equal(record.status, 'EXPIRED');
      assert.equal(record.deposit, undefined);
      assert.deepEqual(record.refusedDeposits, [{ ...deposit, at: T3, reason: 'expired' }]);
    });

    it('when a deposit carries unknown or undefined fields, then only txHash, chain and amount are stored', () => {
      const odd = { txHash: '0xtx1', chain: undefined, amount: '1', extra: 'x' } as unknown as typeof deposit;
      const { record } = applyDeposit(prepared(), odd, T1);
      assert.deepEqual(record.deposit, { txHash: '0xtx1', amount: '1' });
      assert.deepEqual(JSON.parse(JSON.stringify(record)), record, 'the record survives a JSON round trip');
    });

    it('when the stored signature is submitted again, then checkSubmit says duplicate and applySubmit returns the record unchanged', () => {
      for (const rec of [
        deepFreeze(applySubmit(prepared(), payload(), 'm', T1)),
        deepFreeze(applySubmit(applyDeposit(prepared(), deposit, T1).record, payload(), 'm', T2)),
      ]) {
        assert.equal(checkSubmit(rec, SIG_A), 'duplicate');
        assert.equal(applySubmit(rec, payload(SIG_A, T3), 'm', T3), rec);
      }
    });

    it('when a different signature is submitted after one is stored, then checkSubmit says other-signature and applySubmit throws', () => {
      const signed = deepFreeze(applySubmit(prepared(), payload(), 'm', T1));
      assert.equal(checkSubmit(signed, SIG_B), 'other-signature');
      assert.throws(() => applySubmit(signed, payload(SIG_B, T2), 'm', T2), isRefusedApply);
    });

    it('when a submit arrives on EXPIRED, with a new or the stored signature, then checkSubmit says expired and applySubmit throws', () => {
      const expired = deepFreeze(expire(prepared(), EXPIRES));
      assert.equal(checkSubmit(expired, SIG_A), 'expired');
      assert.throws(() => applySubmit(expired, payload(), 'm', T3), isRefusedApply);
      const signedExpired = deepFreeze(expire(applySubmit(prepared(), payload(), 'm', T1), EXPIRES));
      assert.equal(checkSubmit(signedExpired, SIG_A), 'expired');
    });

    it('when the expiry timer fires after a deposit or after expiry, then the record is returned unchanged', () => {
      const pending = deepFreeze(applyDeposit(prepared(), deposit, T1).record);
      assert.equal(expire(pending, EXPIRES), pending);
      const signing = deepFreeze(applySubmit(pending, payload(), 'm', T2));
      assert.equal(expire(signing, EXPIRES), signing);
      const expired = deepFreeze(expire(prepared(), EXPIRES));
      assert.equal(expire(expired, T3), expired);
    });

    it('when a transition returns a new record, then the input record is left as it was', () => {
      const rec = prepared(); // deeply frozen: a mutation would throw in strict mode
      const snapshot = JSON.parse(JSON.stringify(rec));
      applyDeposit(rec, deposit, T1);
      applySubmit(rec, payload(), 'm', T1);
      expire(rec, EXPIRES);
      assert.deepEqual(JSON.parse(JSON.stringify(rec)), snapshot);
    });
  });

  describe('cancel', () => {
    it('when a PREPARED execution is cancelled, then it is CANCELLED with the change in its history and no deposit', () => {
      const rec = applyCancel(prepared(), T1);
      assert.equal(rec.status, 'CANCELLED');
      assert.deepEqual(rec.history, [
        { status: 'PREPARED', at: T0 },
        { status: 'CANCELLED', at: T1 },
      ]);
      assert.equal(rec.updatedAt, T1);
      assert.equal(rec.deposit, undefined);
    });

    it('when an OPERATION_PENDING execution is cancelled, then it is CANCELLED and its deposit is marked refundDue', () => {
      const pending = deepFreeze(applyDeposit(prepared(), deposit, T1).record);
      const rec = applyCancel(pending, T2);
      assert.equal(rec.status, 'CANCELLED');
      assert.deepEqual(rec.deposit, { ...deposit, refundDue: true });
      assert.deepEqual(pending.deposit, deposit, 'the input is left as it was');
    });

    it('when a CANCELLED execution is cancelled again, then checkCancel says duplicate and the same record comes back', () => {
      const cancelled = deepFreeze(applyCancel(prepared(), T1));
      assert.equal(checkCancel(cancelled), 'duplicate');
      assert.equal(applyCancel(cancelled, T2), cancelled);
    });

    it('when a SIGNING or EXPIRED execution is cancelled, then checkCancel refuses and applyCancel throws', () => {
      const signing = deepFreeze(applySubmit(applyDeposit(prepared(), deposit, T1).record, payload(), 'm', T2));
      const expired = deepFreeze(expire(prepared(), EXPIRES));
      assert.equal(checkCancel(signing), 'signing');
      assert.equal(checkCancel(expired), 'expired');
      assert.throws(() => applyCancel(signing, T3), isRefusedApply);
      assert.throws(() => applyCancel(expired, T3), isRefusedApply);
    });

    it('when a submit or a deposit comes after CANCELLED, then the submit is refused and the deposit is recorded for refund, status kept', () => {
      const cancelled = deepFreeze(applyCancel(prepared(), T1));
      assert.equal(checkSubmit(cancelled, SIG_A), 'cancelled');
      assert.throws(() => applySubmit(cancelled, payload(), 'm', T2), isRefusedApply);
      const { record, outcome } = applyDeposit(cancelled, deposit, T2);
      assert.equal(outcome, 'refused-cancelled');
      assert.equal(record.status, 'CANCELLED');
      assert.deepEqual(record.refusedDeposits, [{ ...deposit, at: T2, reason: 'cancelled' }]);
      assert.equal(applyDeposit(deepFreeze(record), deposit, T3).record, record, 'recorded once');
    });

    it('when a PREPARED execution with a stored signature is cancelled, then the signature is kept and the status is CANCELLED', () => {
      const signed = deepFreeze(applySubmit(prepared(), payload(), 'm', T1));
      const rec = applyCancel(signed, T2);
      assert.equal(rec.status, 'CANCELLED');
      assert.deepEqual(rec.signedPayload, signed.signedPayload);
    });
  });

  describe('closedDepositRefusal (a deposit reported after the workflow closed)', () => {
    it("when it is the final record's own deposit, then nothing is owed; another txHash is other-tx; EXPIRED and CANCELLED give their reason; a record that would still take it gives closed", () => {
      const funded = applyDeposit(prepared(), deposit, T1).record;
      assert.equal(closedDepositRefusal(funded, deposit, T2), undefined);
      assert.equal(closedDepositRefusal(funded, { txHash: '0xother' }, T2), 'other-tx');
      assert.equal(closedDepositRefusal(expire(prepared(), T1), deposit, T2), 'expired');
      assert.equal(closedDepositRefusal(applyCancel(prepared(), T1), deposit, T2), 'cancelled');
      assert.equal(closedDepositRefusal(prepared(), deposit, T2), 'closed');
    });
  });

  describe('recordVersion', () => {
    it('when the state machine changes a record, then its version grows; a transition that changes nothing keeps it', () => {
      const steps: ExecutionRecord[] = [prepared()];
      const last = () => steps[steps.length - 1];
      steps.push(applySubmit(last(), payload(), 'm', T1)); // signature stored, status kept
      steps.push(applyDeposit(last(), deposit, T2).record); // → SIGNING via OPERATION_PENDING
      steps.push(applyDeposit(last(), { txHash: '0xother' }, T3).record); // refused, recorded
      for (let i = 1; i < steps.length; i++) assert.ok(recordVersion(steps[i]) > recordVersion(steps[i - 1]), `step ${i}`);
      assert.equal(recordVersion(applyDeposit(last(), deposit, T3).record), recordVersion(last()), 'a duplicate keeps the version');
      assert.ok(recordVersion(applyCancel(prepared(), T1)) > recordVersion(prepared()));
    });

    it('when a status is final, then no transition changes the status any more', () => {
      const finals = [
        applySubmit(applyDeposit(prepared(), deposit, T1).record, payload(), 'm', T2),
        expire(prepared(), EXPIRES),
        applyCancel(prepared(), T1),
      ];
      for (const rec of finals) {
        assert.ok(FINAL_STATUSES.includes(rec.status), rec.status);
        assert.equal(applyDeposit(rec, { txHash: '0xlate' }, T3).record.status, rec.status);
        assert.equal(expire(rec, T3).status, rec.status);
        assert.notEqual(checkCancel(rec), 'ok');
      }
    });
  });

  describe('on-chain deposits: deposit target, transfer identity, reorgs', () => {
    const target = { chain: 'evm:31337', asset: 'native' as const, minAmount: '1000', address: '0x' + 'ab'.repeat(20) };
    const withTarget = () => deepFreeze(initialRecord({ ...prepared(), depositTarget: target }));
    const chainDeposit = (over: object = {}) => ({
      txHash: '0xaa',
      chain: 'evm:31337',
      amount: '1000',
      blockNumber: 7,
      transferIndex: 0,
      ...over,
    });

    it('when prepare set a deposit target, then the record carries it', () => {
      assert.deepEqual(withTarget().depositTarget, target);
      assert.equal(prepared().depositTarget, undefined);
    });

    it('when a transfer of at least minAmount on the target chain arrives, then it completes the deposit with its block and index', () => {
      const { record, outcome } = applyDeposit(withTarget(), chainDeposit({ amount: '1001' }), T1);
      assert.equal(outcome, 'applied');
      assert.equal(record.status, 'OPERATION_PENDING');
      assert.deepEqual(record.deposit, chainDeposit({ amount: '1001' }));
    });

    it('when the amount is below minAmount (compared as integers, not text), then it is refused as below-minimum and recorded once', () => {
      const first = applyDeposit(withTarget(), chainDeposit({ amount: '999' }), T1);
      assert.equal(first.outcome, 'refused-below-minimum');
      assert.equal(first.record.status, 'PREPARED');
      assert.equal(first.record.refusedDeposits[0].reason, 'below-minimum');
      assert.equal(applyDeposit(first.record, chainDeposit({ amount: '999' }), T2).record, first.record);
      // '999' > '1000' as text; as integers it is less.
      assert.equal(applyDeposit(withTarget(), chainDeposit({ amount: '10000' }), T1).outcome, 'applied');
      for (const amount of [undefined, '1.5e3', '0x3e8']) {
        assert.equal(applyDeposit(withTarget(), chainDeposit({ amount }), T1).outcome, 'refused-below-minimum', String(amount));
      }
    });

    it('when the deposit is in another asset than the target (a token to a native target, native or another token to a token target), then it is refused as wrong-asset', () => {
      const token = `erc20:0x${'cd'.repeat(20)}` as const;
      const toNative = applyDeposit(withTarget(), chainDeposit({ asset: token }), T1);
      assert.equal(toNative.outcome, 'refused-wrong-asset');
      assert.equal(toNative.record.refusedDeposits[0].reason, 'wrong-asset');
      const tokenTarget = { ...withTarget(), depositTarget: { ...withTarget().depositTarget!, asset: token } };
      assert.equal(applyDeposit(tokenTarget, chainDeposit({ asset: 'native' }), T1).outcome, 'refused-wrong-asset');
      assert.equal(applyDeposit(tokenTarget, chainDeposit({ asset: `erc20:0x${'ee'.repeat(20)}` }), T1).outcome, 'refused-wrong-asset');
      assert.equal(applyDeposit(tokenTarget, chainDeposit({ asset: token }), T1).outcome, 'applied');
    });

    it('when a token log and a native transfer of one transaction share a transferIndex, then they are two transfers', () => {
      const token = `erc20:0x${'cd'.repeat(20)}` as const;
      const tokenTarget = { ...withTarget(), depositTarget: { ...withTarget().depositTarget!, asset: token } };
      const { record } = applyDeposit(tokenTarget, chainDeposit({ asset: token }), T1);
      assert.equal(applyDeposit(record, chainDeposit({ asset: token }), T1).outcome, 'duplicate');
      assert.equal(applyDeposit(record, chainDeposit({ asset: 'native' }), T1).outcome, 'refused-other-tx');
    });

    it('when the deposit is for another chain than the target, then it is refused as wrong-chain', () => {
      const { record, outcome } = applyDeposit(withTarget(), chainDeposit({ chain: 'evm:1' }), T1);
      assert.equal(outcome, 'refused-wrong-chain');
      assert.equal(record.refusedDeposits[0].reason, 'wrong-chain');
    });

    it('when the same txHash comes with another transfer index, then it is another transfer', () => {
      const done = applyDeposit(withTarget(), chainDeposit(), T1).record;
      assert.equal(applyDeposit(done, chainDeposit(), T2).outcome, 'duplicate');
      assert.equal(applyDeposit(done, chainDeposit({ transferIndex: 1 }), T2).outcome, 'refused-other-tx');
      // An absent index is 0: the HTTP route's deposits keep their identity by txHash.
      assert.equal(applyDeposit(done, { ...chainDeposit(), transferIndex: undefined }, T2).outcome, 'duplicate');
    });

    it('when the deposit is reorganised away, then it is marked reorged once, the status stays and the version grows', () => {
      const done = applyDeposit(withTarget(), chainDeposit(), T1).record;
      const marked = markReorged(done, { txHash: '0xaa', transferIndex: 0 }, T2);
      assert.equal(marked.deposit?.reorged, true);
      assert.equal(marked.status, 'OPERATION_PENDING');
      assert.equal(marked.updatedAt, T2);
      assert.ok(recordVersion(marked) > recordVersion(done));
      assert.equal(markReorged(marked, { txHash: '0xaa', transferIndex: 0 }, T3), marked);
      assert.equal(markReorged(done, { txHash: '0xbb', transferIndex: 0 }, T3), done);
    });

    it('when a refused deposit is reorganised away, then its refusal is marked reorged', () => {
      const refused = applyDeposit(withTarget(), chainDeposit({ amount: '1' }), T1).record;
      const marked = markReorged(refused, { txHash: '0xaa', transferIndex: 0 }, T2);
      assert.equal(marked.refusedDeposits[0].reorged, true);
      assert.ok(recordVersion(marked) > recordVersion(refused));
    });

    it('when a deposit marked reorged is mined again, then the mark goes, the version still grows (the read model keeps the newest), and it is held again', () => {
      const done = applyDeposit(withTarget(), chainDeposit(), T1).record;
      assert.equal(holds(done, { txHash: '0xaa', transferIndex: 0 }), true);
      const marked = markReorged(done, { txHash: '0xaa', transferIndex: 0 }, T2);
      assert.equal(holds(marked, { txHash: '0xaa', transferIndex: 0 }), false);
      const back = markReincluded(marked, { txHash: '0xaa', transferIndex: 0 }, T3);
      assert.equal(back.deposit?.reorged, undefined);
      assert.equal(back.deposit?.reorgs, 2);
      assert.ok(recordVersion(back) > recordVersion(marked));
      assert.equal(holds(back, { txHash: '0xaa', transferIndex: 0 }), true);
      assert.equal(markReincluded(back, { txHash: '0xaa', transferIndex: 0 }, T3), back);
      const again = markReorged(back, { txHash: '0xaa', transferIndex: 0 }, T3);
      assert.ok(recordVersion(again) > recordVersion(back));
      // A refusal comes back the same way.
      const refused = markReorged(
        applyDeposit(withTarget(), chainDeposit({ amount: '1' }), T1).record,
        { txHash: '0xaa', transferIndex: 0 },
        T2,
      );
      assert.equal(markReincluded(refused, { txHash: '0xaa', transferIndex: 0 }, T3).refusedDeposits[0].reorged, undefined);
    });

    it('when the chain refutes claims, then each is recorded once, at most MAX_REFUTED_IN_RECORD, each growing the version, and never as a refusal owed back', () => {
      let rec = withTarget();
      for (let i = 0; i < MAX_REFUTED_IN_RECORD + 3; i++) {
        const next = refuteClaim(rec, { txHash: `0x${i}`, transferIndex: 0 }, 'not-found', T1);
        if (i < MAX_REFUTED_IN_RECORD) assert.ok(recordVersion(next) > recordVersion(rec));
        else assert.equal(next, rec);
        rec = next;
      }
      assert.equal(refuteClaim(rec, { txHash: '0x0', transferIndex: 0 }, 'failed', T2), rec);
      assert.equal(rec.refutedClaims?.length, MAX_REFUTED_IN_RECORD);
      assert.deepEqual(rec.refutedClaims?.[0], { txHash: '0x0', transferIndex: 0, reason: 'not-found', at: T1 });
      assert.deepEqual(rec.refusedDeposits, []);
    });
  });
});
