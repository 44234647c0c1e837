import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { DepositSignal } from '../../domain/chain-watcher';
import { applyCancel, applyDeposit, initialRecord, type ExecutionRecord } from '../../domain/execution-state';
import { dustBatchReason, firstPerExecution, isDust, owedReason, pastDustShare, signalVerdict } from '../../domain/owed-transfers';

const CHAIN = 'evm:31337';
const ADDRESS = '0x' + 'aa'.repeat(20);
const TOKEN = `erc20:0x${'cd'.repeat(20)}` as const;
const T0 = '2025-01-01T00:00:00.000Z';
const T1 = '2025-01-01T00:01:00.000Z';

/** A PREPARED execution whose deposit address takes at least 1000 of `asset`. */
const prepared = (asset: 'native' | typeof TOKEN = 'native'): ExecutionRecord =>
  initialRecord({
    executionId: 'e1',
    wallet: 'w1',
    intent: { a: 1 },
    intentHash: 'ab'.repeat(32),
    signerPublicKey: '0x' + 'cd'.repeat(32),
    createdAt: T0,
    expiresAt: '2025-01-01T01:00:00.000Z',
    depositTarget: { chain: CHAIN, asset, minAmount: '1000', address: ADDRESS },
  });

let n = 0;
const signal = (amount: string, extra: Partial<DepositSignal> = {}, asset: 'native' | typeof TOKEN = 'native'): DepositSignal => ({
  workflowId: 'exec:w1:e1',
  to: ADDRESS,
  blockHash: '0xb1',
  deposit: { txHash: `0x${(++n).toString(16).padStart(64, '0')}`, chain: CHAIN, amount, blockNumber: 1, transferIndex: 0, asset },
  ...extra,
});

describe('domain/owed-transfers: which transfers the watcher signals and which it owes back', () => {
  it('when a transfer can complete the deposit, or no record is written yet, then it is sent', () => {
    assert.deepEqual(signalVerdict(prepared(), signal('1000'), T1), { verdict: 'send' });
    assert.deepEqual(signalVerdict(undefined, signal('1'), T1), { verdict: 'send' });
  });

  it('when a signal is a dust batch, then it is owed as dust whatever it sums to, and its row names what the address takes', () => {
    const batch = signal('5000', { transfers: 7 });
    assert.deepEqual(signalVerdict(prepared(), batch, T1), {
      verdict: 'owed',
      reason: '7 transfers in one block the address cannot take (a dust batch)',
      tooSmall: true,
    });
    assert.equal(owedReason(batch, prepared(), T1), 'below-minimum');
    assert.equal(owedReason(signal('5000', { transfers: 2 }, TOKEN), prepared(), T1), 'wrong-asset');
    assert.equal(isDust({ signal: batch }), true);
  });

  it('when a signal is a surplus batch, then it is owed as money another deposit of the block came before, not as dust, whatever the record says', () => {
    const batch = signal('7000', { transfers: 7, surplus: true });
    for (const record of [prepared(), undefined])
      assert.deepEqual(signalVerdict(record, batch, T1), {
        verdict: 'owed',
        reason: '7 transfers in one block past the first the address could take (a surplus batch)',
      });
    assert.equal(owedReason(batch, prepared(), T1), 'other-tx');
    assert.equal(isDust({ signal: batch }), false);
  });

  it('when a transfer is below the minimum or of another asset, then it is dust: sent within its address share, owed past it', () => {
    assert.deepEqual(signalVerdict(prepared(), signal('999'), T1), { verdict: 'dust', outcome: 'refused-below-minimum' });
    assert.deepEqual(signalVerdict(prepared(), signal('5000', {}, TOKEN), T1), { verdict: 'dust', outcome: 'refused-wrong-asset' });
    assert.deepEqual(pastDustShare('refused-below-minimum'), {
      reason: 'below-minimum, past the address share of signalled ones',
      tooSmall: true,
    });
    assert.equal(isDust({ signal: signal('1'), ...pastDustShare('refused-wrong-asset') }), true);
  });

  it('when the execution holds another deposit or is cancelled, then the transfer is owed back, not dust', () => {
    const first = signal('1000');
    const pending = applyDeposit(prepared(), first.deposit, T1).record;
    const other = signal('2000');
    assert.deepEqual(signalVerdict(pending, other, T1), { verdict: 'owed', reason: 'the execution cannot take it (refused-other-tx)' });
    assert.equal(isDust({ signal: other }), false);
    const cancelled = applyCancel(prepared(), T1);
    assert.deepEqual(signalVerdict(cancelled, other, T1), { verdict: 'owed', reason: 'the execution cannot take it (refused-cancelled)' });
    assert.equal(owedReason(other, cancelled, T1), 'cancelled');
  });

  it("when the transfer is the execution's own deposit again, then it is skipped while the record holds it, sent once it was reorganised away", () => {
    const own = signal('1000');
    const pending = applyDeposit(prepared(), own.deposit, T1).record;
    assert.deepEqual(signalVerdict(pending, own, T1), { verdict: 'skip' });
    assert.equal(owedReason(own, pending, T1), undefined, 'its own deposit is no refund');
    const reorged: ExecutionRecord = { ...pending, deposit: { ...pending.deposit!, reorged: true } };
    assert.deepEqual(signalVerdict(reorged, own, T1), { verdict: 'send' });
  });

  it('when an undelivered signal has no record, then its row says closed', () => {
    assert.equal(owedReason(signal('1000'), undefined, T1), 'closed');
  });

  it('when a dust batch is judged, then it is below-minimum exactly when it is of the asset the address takes (any case)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('native', TOKEN, TOKEN.toUpperCase()),
        fc.constantFrom<'native' | typeof TOKEN>('native', TOKEN),
        (sent, wanted) => {
          const expected = sent.toLowerCase() === wanted ? 'below-minimum' : 'wrong-asset';
          assert.equal(dustBatchReason(prepared(wanted), { asset: sent }), expected);
        },
      ),
    );
    assert.equal(dustBatchReason(undefined, {}), 'below-minimum', 'no record: a native address');
  });

  it('when a round brings one execution several transfers that could each be its deposit, then only the first in chain order is sent, every signal is sent or owed once, and each execution hears at most one possible deposit', () => {
    const executions = ['exec:w1:e1', 'exec:w1:e2', 'exec:w1:e3'];
    fc.assert(
      fc.property(
        fc.array(fc.record({ execution: fc.constantFrom(...executions), ownAgain: fc.boolean() }), { maxLength: 40 }),
        (drawn) => {
          const signals = drawn.map(({ execution, ownAgain }) => ({ ...signal('1000', { workflowId: execution }), ownAgain }));
          const { send, later } = firstPerExecution(signals, (s) => !s.ownAgain);
          assert.equal(send.length + later.length, signals.length);
          assert.deepEqual(
            send,
            signals.filter((s) => send.includes(s)),
            'send keeps the round order',
          );
          for (const e of executions) {
            const possible = signals.filter((s) => s.workflowId === e && !s.ownAgain);
            const sent = send.filter((s) => s.workflowId === e && !s.ownAgain);
            assert.deepEqual(sent, possible.slice(0, 1));
          }
          assert.ok(
            signals.filter((s) => s.ownAgain).every((s) => send.includes(s)),
            'its own deposit mined again is always sent',
          );
        },
      ),
    );
  });
});
