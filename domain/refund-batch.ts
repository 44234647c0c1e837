/**
 * Which ledger rows of one deposit address one refund transaction pays together, and how its value
 * is shared among them, pure (docs/decisions/0091). Rows of the same address, asset and destination
 * go back in one transaction: one fee (and for a token one gas top-up) instead of one per row.
 */
import { holdBeforeSigning, refundDestination, type RefundRowFacts, type RefundRules, type RefundSourceFacts } from './refund-policy';

/** The most rows one refund transaction pays (its first row included). */
export const REFUND_BATCH_ROWS = 16;

/** What the batch reads of a row besides the policy's facts. */
export interface BatchCandidate extends RefundRowFacts {
  id: string;
  /** Wei a transaction that paid nobody took from the row's own amount (native rows). */
  feesSpent?: string;
}

/**
 * The rows of `others` (the address's other `due` rows, oldest first) that join `first`'s refund
 * transaction: those the policy lets go without a person, of the same chain and asset, to the same
 * destination, while the batch's sum stays within the asset's limit (a row a person approved above
 * the limit goes alone), at most REFUND_BATCH_ROWS in all. Depth and the chain's word on each row
 * are the caller's to check afterwards.
 */
export function rowsPaidWith<T extends BatchCandidate>(
  first: BatchCandidate,
  others: readonly T[],
  source: RefundSourceFacts,
  rules: RefundRules,
): T[] {
  const destination = refundDestination(first, source);
  if ('hold' in destination || first.chain === undefined || first.amount === undefined) return [];
  const asset = (first.asset ?? 'native').toLowerCase();
  const limit = rules.limit(first.chain, asset);
  if (first.approvedBy !== undefined && (limit === undefined || BigInt(first.amount) > limit)) return [];
  let sum = BigInt(first.amount);
  const joined: T[] = [];
  for (const row of others) {
    if (joined.length + 1 >= REFUND_BATCH_ROWS) break;
    if (row.id === first.id || row.chain !== first.chain || row.amount === undefined) continue;
    if ((row.asset ?? 'native').toLowerCase() !== asset) continue;
    if (row.approvedBy !== undefined || holdBeforeSigning(row, source, rules) !== undefined) continue;
    const to = refundDestination(row, source);
    if ('hold' in to || to.to !== destination.to) continue;
    const next = sum + BigInt(row.amount);
    if (limit === undefined || next > limit) continue;
    sum = next;
    joined.push(row);
  }
  return joined;
}

/** A native row's money still on the address: its amount less what transactions that paid nobody took from it. */
export const moneyLeft = (row: { amount?: string; feesSpent?: string }): bigint => BigInt(row.amount ?? '0') - BigInt(row.feesSpent ?? '0');

/**
 * `total` (what one transaction paid) shared among rows in proportion to `parts` (what each row
 * put in), each share rounded down and what rounding leaves given to the first row: the shares add
 * up to `total` exactly, and none is negative when `total` and every part are not.
 */
export function sharesOf(total: bigint, parts: readonly bigint[]): bigint[] {
  const whole = parts.reduce((a, b) => a + b, 0n);
  if (parts.length === 0) return [];
  if (whole <= 0n) return parts.map((_, i) => (i === 0 ? total : 0n));
  const shares = parts.map((p) => (total * p) / whole);
  shares[0] += total - shares.reduce((a, b) => a + b, 0n);
  return shares;
}
