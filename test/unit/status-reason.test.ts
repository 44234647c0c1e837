import assert from 'node:assert/strict';
import type { ExecutionRecord } from '../../domain/execution-record';
import { STATUS_REASON_CODES, confirmingOf, statusReason, type PendingTransfer } from '../../domain/status-reason';
import { preparedRecord } from '../support/records';

const ADDRESS = '0x52908400098527886E0F7030069857D2E4169EE7';
const target = { chain: 'evm:31337', asset: 'native' as const, minAmount: '1000', address: ADDRESS };
const at = (status: ExecutionRecord['status'], extra: Partial<ExecutionRecord> = {}): ExecutionRecord => ({
  ...preparedRecord('e-1', target),
  status,
  ...extra,
});
const transfer = (extra: Partial<PendingTransfer> = {}): PendingTransfer => ({
  to: ADDRESS.toLowerCase(),
  txHash: '0xaa',
  blockNumber: 10,
  amount: '1000',
  asset: 'native',
  ...extra,
});

describe('unit: status reasons (domain/status-reason.ts)', () => {
  it('when each status is reasoned, then each answers its own code, words, and the deadline it speaks of', () => {
    const deposit = { txHash: '0xd', amount: '1000' };
    const cases: Array<[ExecutionRecord, string, string | undefined]> = [
      [at('PREPARED'), 'awaiting-deposit', '2026-01-02T00:00:00.000Z'],
      [at('OPERATION_PENDING', { deposit, signingDeadline: '2026-01-01T00:30:00.000Z' }), 'awaiting-signature', '2026-01-01T00:30:00.000Z'],
      [at('SIGNING', { deposit }), 'signed', undefined],
      [at('EXPIRED'), 'expired-without-deposit', undefined],
      [at('EXPIRED', { deposit }), 'expired-unsigned', undefined],
      [at('CANCELLED'), 'cancelled', undefined],
    ];
    for (const [record, code, until] of cases) {
      const reason = statusReason(record);
      assert.equal(reason.code, code, record.status);
      assert.equal(reason.until, until, code);
      assert.ok(reason.message.length > 20, reason.message);
    }
    assert.match(statusReason(at('PREPARED')).message, new RegExp(`at least 1000 base units of native to ${ADDRESS}`));
    assert.deepEqual([...new Set(cases.map(([, c]) => c))].sort(), STATUS_REASON_CODES.filter((c) => !c.startsWith('deposit-')).sort());
  });

  it('when a PREPARED record refused a transfer below the minimum, then it says so and still waits; an expired or other-tx refusal does not count', () => {
    const refused = at('PREPARED', {
      refusedDeposits: [{ txHash: '0xsmall', amount: '1', at: '2026-01-01T00:01:00.000Z', reason: 'below-minimum' }],
    });
    const reason = statusReason(refused);
    assert.equal(reason.code, 'deposit-refused');
    assert.match(reason.message, /0xsmall\) was less than the minimum: it is owed back/);
    const other = at('PREPARED', { refusedDeposits: [{ txHash: '0xo', at: '2026-01-01T00:01:00.000Z', reason: 'other-tx' }] });
    assert.equal(statusReason(other).code, 'awaiting-deposit');
  });

  it('when the watcher holds a fitting transfer short of its confirmations, then the reason is deposit-confirming with n of N', () => {
    const record = at('PREPARED');
    const confirming = confirmingOf(record, [transfer({ blockNumber: 12, txHash: '0xlate' }), transfer()], 11, 4);
    assert.deepEqual(confirming, { txHash: '0xaa', blockNumber: 10, seen: 2, needed: 4 });
    const reason = statusReason(record, confirming);
    assert.equal(reason.code, 'deposit-confirming');
    assert.match(reason.message, /block 10, 2 of 4 confirmations deep/);
  });

  it('when the held transfers are too small, of another asset, to another address, or the record is not PREPARED, then nothing is confirming', () => {
    assert.equal(confirmingOf(at('PREPARED'), [transfer({ amount: '999' })], 11, 4), undefined);
    assert.equal(confirmingOf(at('PREPARED'), [transfer({ asset: 'erc20:0x' + '1'.repeat(40) })], 11, 4), undefined);
    assert.equal(confirmingOf(at('PREPARED'), [transfer({ to: '0x' + '2'.repeat(40) })], 11, 4), undefined);
    assert.equal(confirmingOf(at('OPERATION_PENDING'), [transfer()], 11, 4), undefined);
    assert.equal(confirmingOf(preparedRecord('no-target'), [transfer()], 11, 4), undefined);
  });
});
