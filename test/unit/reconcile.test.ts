import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { ExecutionRecord } from '../../domain/execution-state';
import { preparedRecord } from '../support/records';
import { reconcile, type InboundTransfer, type LedgerEntry, type PaidRefund, type RefundOnChain } from '../../domain/reconcile';

const record = (workflowId: string, deposit?: ExecutionRecord['deposit']): ExecutionRecord => ({
  ...preparedRecord(workflowId),
  ...(deposit ? { deposit, status: 'OPERATION_PENDING' as const } : {}),
});

describe('domain/reconcile: every transfer in is taken or owed', () => {
  it('when a transaction moves native value and a token to deposit addresses, then each asset is summed apart, a token deposit is taken only as that token, and its ledger row counts only for it', () => {
    const token = `erc20:0x${'cd'.repeat(20)}`;
    const tx = `0x${'11'.repeat(32)}`;
    const transfers: InboundTransfer[] = [
      { workflowId: 'exec:w:a', txHash: tx, transferIndex: 0, amount: '5', blockNumber: 10, asset: 'native' },
      { workflowId: 'exec:w:a', txHash: tx, transferIndex: 0, amount: '7000000', blockNumber: 10, asset: token },
      { workflowId: 'exec:w:b', txHash: tx, transferIndex: 1, amount: '3000000', blockNumber: 10, asset: token },
    ];
    const records = new Map([
      ['exec:w:a', record('exec:w:a', { txHash: tx, transferIndex: 0, blockNumber: 10, asset: token as `erc20:${string}` })],
    ]);
    const ledger: LedgerEntry[] = [
      { workflowId: 'exec:w:a', txHash: tx, transferIndex: 0, asset: 'native', state: 'due' },
      { workflowId: 'exec:w:b', txHash: tx, transferIndex: 1, asset: token, state: 'refunded' },
    ];
    const report = reconcile(transfers, records, ledger, { from: 0, to: 100 });
    assert.deepEqual(report.sums, { in: '5', taken: '0', due: '5', refunded: '0', waived: '0', unaccounted: '0' });
    assert.deepEqual(report.tokenSums, {
      [token]: { in: '10000000', taken: '7000000', due: '0', refunded: '3000000', waived: '0', unaccounted: '0' },
    });
    assert.equal(report.balanced, true);
  });

  it('when each transfer is taken, owed in some state, or nowhere, then the sums add up to what came in, and it balances exactly when none is nowhere', () => {
    const where = fc.constantFrom('taken', 'due', 'refunded', 'waived', 'nowhere');
    fc.assert(
      fc.property(fc.array(fc.tuple(where, fc.bigInt({ min: 1n, max: 10n ** 24n })), { maxLength: 40 }), (plan) => {
        const transfers: InboundTransfer[] = [];
        const records = new Map<string, ExecutionRecord>();
        const ledger: LedgerEntry[] = [];
        plan.forEach(([place, amount], i) => {
          const t = {
            workflowId: `exec:w:${i}`,
            txHash: `0x${i.toString(16).padStart(64, '0')}`,
            transferIndex: 0,
            amount: String(amount),
            blockNumber: 10,
          };
          transfers.push(t);
          if (place === 'taken')
            records.set(
              t.workflowId,
              record(t.workflowId, { txHash: t.txHash.toUpperCase().replace('0X', '0x'), transferIndex: 0, blockNumber: 10 }),
            );
          else if (place !== 'nowhere') ledger.push({ workflowId: t.workflowId, txHash: t.txHash, transferIndex: 0, state: place });
        });
        const report = reconcile(transfers, records, ledger, { from: 0, to: 100 });
        const sum = (p: string) => plan.filter(([place]) => place === p).reduce((a, [, n]) => a + n, 0n);
        assert.deepEqual(report.sums, {
          in: String(plan.reduce((a, [, n]) => a + n, 0n)),
          taken: String(sum('taken')),
          due: String(sum('due')),
          refunded: String(sum('refunded')),
          waived: String(sum('waived')),
          unaccounted: String(sum('nowhere')),
        });
        assert.equal(report.balanced, !plan.some(([place]) => place === 'nowhere'));
      }),
    );
  });

  it('when a deposit taken in the range is not on the chain, then it is a difference, unless the watcher flagged it reorged (listed apart)', () => {
    const records = new Map([
      ['exec:w:a', record('exec:w:a', { txHash: '0xaa', blockNumber: 50 })],
      ['exec:w:b', record('exec:w:b', { txHash: '0xbb', blockNumber: 51, reorged: true })],
      ['exec:w:c', record('exec:w:c', { txHash: '0xcc', blockNumber: 500 })],
    ]);
    const report = reconcile([], records, [], { from: 0, to: 100 });
    assert.deepEqual(report.takenNotOnChain, [{ workflowId: 'exec:w:a', txHash: '0xaa', transferIndex: 0 }]);
    assert.deepEqual(report.reorgedAway, [{ workflowId: 'exec:w:b', txHash: '0xbb', transferIndex: 0 }]);
    assert.equal(report.balanced, false);
  });

  it('when every ledger row is judged against the chain, then a row whose transfer the chain shows is present, one it does not is absent, another amount differs; over the whole chain a void row present or a due row absent unbalances it', () => {
    const t = (i: number, amount = '100'): InboundTransfer => ({
      workflowId: `exec:w:${i}`,
      txHash: `0x${i.toString(16).padStart(64, '0')}`,
      transferIndex: 0,
      amount,
      blockNumber: 10,
    });
    const row = (i: number, state: LedgerEntry['state'], amount = '100'): LedgerEntry => ({ ...t(i), amount, state });
    const transfers = [t(1), t(2), t(3)];
    const ledger = [row(1, 'due'), row(2, 'due', '999'), row(4, 'void'), row(3, 'refunded')];
    const whole = reconcile(transfers, new Map(), ledger, { from: 0, to: 100 });
    assert.deepEqual(
      whole.ledger.map((v) => [v.workflowId, v.verdict]),
      [
        ['exec:w:1', 'present'],
        ['exec:w:2', 'amount-differs'],
        ['exec:w:4', 'absent'],
        ['exec:w:3', 'present'],
      ],
    );
    assert.deepEqual(whole.ledgerCounts, { present: 2, absent: 1, 'amount-differs': 1 });
    assert.deepEqual(
      whole.ledgerContradicted.map((v) => v.workflowId),
      ['exec:w:2'],
    );
    assert.equal(whole.balanced, false);
    const voidPresent = reconcile([t(5)], new Map(), [row(5, 'void')], { from: 0, to: 100 });
    assert.deepEqual(
      voidPresent.ledgerContradicted.map((v) => [v.workflowId, v.state]),
      [['exec:w:5', 'void']],
    );
    // The money is there and its row says nobody is owed it: unaccounted until the watcher brings the row back.
    assert.equal(voidPresent.sums.due, '0');
    assert.equal(voidPresent.sums.unaccounted, '100');
    // Over a partial range a row of an earlier block is absent from what was read: listed, not judged.
    const partial = reconcile([], new Map(), [row(6, 'due')], { from: 50, to: 100 });
    assert.deepEqual([partial.ledgerCounts.absent, partial.ledgerContradicted.length, partial.balanced], [1, 0, true]);
  });
});

describe("domain/reconcile: the service's own transfers and the refunds it paid", () => {
  const A = `0x${'aa'.repeat(20)}`;
  const P = `0x${'11'.repeat(20)}`;
  const tx = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;
  const paid = (n: number, over: Partial<PaidRefund> = {}): PaidRefund => ({
    id: `r${n}`,
    workflowId: `exec:w:${n}`,
    txHash: tx(0x100 + n),
    to: P,
    value: '900',
    block: 20,
    ...over,
  });
  const onChain = (over: Partial<RefundOnChain> = {}): RefundOnChain => ({
    to: P,
    value: '900',
    blockNumber: 20,
    succeeded: true,
    ...over,
  });

  it('when a deposit address pays another deposit address, then that transfer is labelled a refund: not money in, not unaccounted, and the books balance', () => {
    const transfers: InboundTransfer[] = [
      {
        workflowId: 'exec:w:b',
        txHash: tx(1),
        transferIndex: 0,
        amount: '700',
        blockNumber: 10,
        from: A.toUpperCase().replace('0X', '0x'),
      },
      { workflowId: 'exec:w:b', txHash: tx(2), transferIndex: 0, amount: '5', blockNumber: 10, from: P },
    ];
    const ledger: LedgerEntry[] = [{ workflowId: 'exec:w:b', txHash: tx(2), transferIndex: 0, state: 'due' }];
    const report = reconcile(transfers, new Map(), ledger, { from: 0, to: 100 }, { depositAddresses: new Set([A]) });
    assert.deepEqual(report.sums, { in: '5', taken: '0', due: '5', refunded: '0', waived: '0', unaccounted: '0' });
    assert.deepEqual(
      report.refundTransfers.map((t) => t.txHash),
      [tx(1)],
    );
    assert.equal(report.transfers, 1);
    assert.equal(report.balanced, true);
    const unlabelled = reconcile(transfers, new Map(), ledger, { from: 0, to: 100 });
    assert.equal(unlabelled.sums.unaccounted, '700', 'without the deposit addresses it would be money nobody accounts for');
    assert.equal(unlabelled.balanced, false);
  });

  it('when the refunds the service recorded paid are on the chain as recorded, then each is confirmed; each the chain contradicts is missing with why, and unbalances the books read from block 0', () => {
    const refundsPaid = [paid(1), paid(2, { to: P.toUpperCase().replace('0X', '0x') }), paid(3), paid(4), paid(5), paid(6), paid(7)];
    const refundTxs = new Map<string, RefundOnChain | undefined>([
      [tx(0x101), onChain()],
      [tx(0x102), onChain()],
      [tx(0x103), undefined],
      [tx(0x104), onChain({ blockNumber: null, succeeded: false })],
      [tx(0x105), onChain({ succeeded: false })],
      [tx(0x106), onChain({ to: A })],
      [tx(0x107), onChain({ value: '901' })],
    ]);
    const report = reconcile([], new Map(), [], { from: 0, to: 100 }, { refundsPaid, refundTxs });
    assert.equal(report.refundsPaid.confirmed, 2);
    assert.deepEqual(
      report.refundsPaid.missing.map((m) => [m.id, m.why]),
      [
        ['r3', 'not-found'],
        ['r4', 'pending'],
        ['r5', 'failed'],
        ['r6', 'other-recipient'],
        ['r7', 'other-value'],
      ],
    );
    assert.equal(report.refundsPaid.missing[4].chainValue, '901');
    assert.equal(report.balanced, false);
    const partial = reconcile([], new Map(), [], { from: 50, to: 100 }, { refundsPaid, refundTxs });
    assert.equal(partial.refundsPaid.missing.length, 5, 'listed from any block');
    assert.equal(partial.balanced, true, 'a contradiction only over the whole chain');
    const allThere = reconcile([], new Map(), [], { from: 0, to: 100 }, { refundsPaid: [paid(1), paid(2)], refundTxs });
    assert.deepEqual([allThere.refundsPaid.confirmed, allThere.balanced], [2, true]);
  });

  it('when rows of one address were paid together by one transaction, then their refundValues add up to what it paid and each is confirmed; a share recorded wrong makes each of them missing', () => {
    const together = [paid(1, { value: '300' }), paid(2, { txHash: tx(0x101), value: '600' })];
    const refundTxs = new Map<string, RefundOnChain | undefined>([[tx(0x101), onChain()]]);
    const report = reconcile([], new Map(), [], { from: 0, to: 100 }, { refundsPaid: together, refundTxs });
    assert.deepEqual([report.refundsPaid.confirmed, report.balanced], [2, true]);
    const wrong = reconcile(
      [],
      new Map(),
      [],
      { from: 0, to: 100 },
      { refundsPaid: [together[0], { ...together[1], value: '601' }], refundTxs },
    );
    assert.deepEqual(
      wrong.refundsPaid.missing.map((m) => [m.id, m.why]),
      [
        ['r1', 'other-value'],
        ['r2', 'other-value'],
      ],
    );
  });
});
