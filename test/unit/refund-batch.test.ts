import assert from 'node:assert/strict';
import fc from 'fast-check';
import { REFUND_BATCH_ROWS, rowsPaidWith, sharesOf, type BatchCandidate } from '../../domain/refund-batch';
import type { RefundRules } from '../../domain/refund-policy';

const CHAIN = 'evm:31337';
const PAYER = '0x' + 'ab'.repeat(20);
const OTHER = '0x' + 'cd'.repeat(20);
const TOKEN = 'erc20:0x' + '11'.repeat(20);

let next = 0;
const row = (over: Partial<BatchCandidate> = {}): BatchCandidate => ({
  id: `r${next++}`,
  chain: CHAIN,
  amount: '100',
  asset: 'native',
  transfers: 1,
  sender: PAYER,
  payerKind: 'eoa',
  ...over,
});

/** A limit of 1,000 base units for every asset (`null`: none set), a minimum of 10, a gas account. */
const rules = (limit: bigint | null = 1000n): RefundRules => ({ limit: () => limit ?? undefined, minimum: () => 10n, gasAccount: true });

describe('domain/refund-batch: which rows one refund transaction pays together, and how its value is shared', () => {
  it('when other due rows share the first row’s asset and destination, then they join it oldest first; another asset, another payer, a row the policy holds, an approved row or another chain do not', () => {
    const first = row();
    const same = [row(), row({ amount: '50' })];
    const others = [
      row({ asset: TOKEN }),
      row({ sender: OTHER }),
      row({ payerKind: 'contract' }),
      row({ amount: '5' }),
      row({ transfers: 3 }),
      row({ approvedBy: 'ops' }),
      row({ chain: 'evm:1' }),
    ];
    const joined = rowsPaidWith(first, [same[0], ...others, same[1]], {}, rules());
    assert.deepEqual(
      joined.map((r) => r.id),
      same.map((r) => r.id),
    );
  });

  it('when the execution named a refundAddress, then every payer’s rows go there together', () => {
    const joined = rowsPaidWith(row(), [row({ sender: OTHER }), row({ sender: undefined })], { refundAddress: OTHER }, rules());
    assert.equal(joined.length, 2);
  });

  it('when the sum would pass the asset’s limit, then the rows that would pass it wait for their own transaction; with no limit set, or a first row approved above it, nothing joins', () => {
    const first = row({ amount: '600' });
    const joined = rowsPaidWith(first, [row({ amount: '300' }), row({ amount: '200' }), row({ amount: '100' })], {}, rules());
    assert.deepEqual(
      joined.map((r) => r.amount),
      ['300', '100'],
    );
    assert.deepEqual(rowsPaidWith(row({ approvedBy: 'ops' }), [row()], {}, rules(null)), []);
    assert.deepEqual(rowsPaidWith(row({ amount: '2000', approvedBy: 'ops' }), [row()], {}, rules()), []);
  });

  it('when many rows could join, then one transaction pays REFUND_BATCH_ROWS at most, the first included', () => {
    const joined = rowsPaidWith(
      row({ amount: '1' }),
      Array.from({ length: 40 }, () => row({ amount: '10' })),
      {},
      rules(),
    );
    assert.equal(joined.length, REFUND_BATCH_ROWS - 1);
  });

  it('when a first row has no destination of its own, then nothing joins it (it is held alone)', () => {
    assert.deepEqual(rowsPaidWith(row({ sender: undefined }), [row()], {}, rules()), []);
  });

  it('property: shares add up to the total exactly, none is negative, and each is within one unit of its proportional part', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: 10n ** 24n }),
        fc.array(fc.bigInt({ min: 1n, max: 10n ** 22n }), { minLength: 1, maxLength: REFUND_BATCH_ROWS }),
        (total, parts) => {
          const shares = sharesOf(total, parts);
          const whole = parts.reduce((a, b) => a + b, 0n);
          assert.equal(shares.length, parts.length);
          assert.equal(
            shares.reduce((a, b) => a + b, 0n),
            total,
          );
          for (const [i, share] of shares.entries()) {
            assert.ok(share >= 0n);
            const exact = (total * parts[i]) / whole;
            // Only the first row takes what rounding leaves: less than one unit per row.
            assert.ok(i === 0 ? share - exact < BigInt(parts.length) : share === exact);
          }
        },
      ),
    );
  });
});
