/**
 * The fees of a native refund, pure (docs/decisions/0081): what the first transaction offers, what a
 * replacement at the same nonce must offer, and what is left of the row's amount to pay back.
 * Every refund spends at most the row's own amount: value + gas × the fee cap per gas, so the
 * deposit the execution took and other rows' money on the same address are never touched.
 */

/** EIP-1559 fees, or a legacy gas price on a chain without a base fee. */
export type RefundFees = { kind: 'eip1559'; maxFeePerGas: bigint; maxPriorityFeePerGas: bigint } | { kind: 'legacy'; gasPrice: bigint };

/** The least tip a refund offers (0.1 gwei): a node's history of empty blocks says 0, which no block builder takes. */
export const MIN_PRIORITY_FEE = 100_000_000n;

/**
 * A replacement's fees over the one it replaces, in per mille: geth and reth refuse a same-nonce
 * replacement that does not raise both the fee cap and the tip by at least 10 %; 12.5 % leaves room
 * for rounding.
 */
export const REPLACEMENT_BUMP_PER_MILLE = 1125n;

/**
 * The first offer, from `eth_feeHistory` over recent blocks with the 50th percentile of tips:
 * `baseFeePerGas` has one more entry than blocks, the next block's base fee. A tip of the recent
 * median (at least MIN_PRIORITY_FEE) and a fee cap of twice the next base fee plus the tip (six
 * full blocks in a row may raise the base fee by 12.5 % each before it is reached). A chain whose
 * history has no base fee is legacy: `gasPrice` (eth_gasPrice) is offered.
 */
export function firstFees(
  history: { baseFeePerGas: readonly bigint[]; reward?: readonly (readonly bigint[])[] },
  gasPrice: bigint,
): RefundFees {
  const nextBase = history.baseFeePerGas[history.baseFeePerGas.length - 1];
  if (nextBase === undefined || history.baseFeePerGas.every((b) => b === 0n)) return { kind: 'legacy', gasPrice };
  const tips = (history.reward ?? [])
    .map((r) => r[0])
    .filter((t): t is bigint => t !== undefined)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const median = tips.length === 0 ? 0n : tips[Math.floor(tips.length / 2)];
  const tip = median > MIN_PRIORITY_FEE ? median : MIN_PRIORITY_FEE;
  return { kind: 'eip1559', maxFeePerGas: 2n * nextBase + tip, maxPriorityFeePerGas: tip };
}

const bump = (value: bigint): bigint => {
  const raised = (value * REPLACEMENT_BUMP_PER_MILLE + 999n) / 1000n;
  return raised > value ? raised : value + 1n;
};
const max = (a: bigint, b: bigint) => (a > b ? a : b);

/**
 * The fees of a replacement of `previous` at the same nonce: every field raised by at least
 * REPLACEMENT_BUMP_PER_MILLE (and by 1 wei at the least), or to what the chain asks now (`market`)
 * where that is more. Of the same kind as `previous`.
 */
export function replacementFees(previous: RefundFees, market: RefundFees): RefundFees {
  if (previous.kind === 'legacy') {
    const now = market.kind === 'legacy' ? market.gasPrice : market.maxFeePerGas;
    return { kind: 'legacy', gasPrice: max(bump(previous.gasPrice), now) };
  }
  const tip = max(bump(previous.maxPriorityFeePerGas), market.kind === 'eip1559' ? market.maxPriorityFeePerGas : 0n);
  const cap = max(bump(previous.maxFeePerGas), market.kind === 'eip1559' ? market.maxFeePerGas : market.gasPrice);
  return { kind: 'eip1559', maxFeePerGas: max(cap, tip), maxPriorityFeePerGas: tip };
}

/** The most a transaction of `gas` at `fees` can cost: what the node checks the balance for before it takes it. */
export function maxCost(gas: bigint, fees: RefundFees): bigint {
  return gas * (fees.kind === 'legacy' ? fees.gasPrice : fees.maxFeePerGas);
}

/** The value a refund of `amount` pays at `gas` and `fees` (amount less the most it can cost); undefined when nothing would be left. */
export function refundValue(amount: bigint, gas: bigint, fees: RefundFees): bigint | undefined {
  const value = amount - maxCost(gas, fees);
  return value > 0n ? value : undefined;
}

/** Whether `amount` is too small to pay back: less than `multiple` times the refund's most cost at its first fees. */
export function tooSmall(amount: bigint, gas: bigint, fees: RefundFees, multiple: number): boolean {
  return amount < BigInt(multiple) * maxCost(gas, fees);
}

/** A row's fee cap: its refunds (and a cancel) may cost at most half its amount, then it is held for a person. */
export function withinFeeCap(amount: bigint, gas: bigint, fees: RefundFees): boolean {
  return 2n * maxCost(gas, fees) <= amount;
}

/** The fees of a signed variant as the ledger keeps them (decimal strings). */
export function feeFields(fees: RefundFees): { maxFeePerGas: string; maxPriorityFeePerGas: string } | { gasPrice: string } {
  return fees.kind === 'legacy'
    ? { gasPrice: fees.gasPrice.toString() }
    : { maxFeePerGas: fees.maxFeePerGas.toString(), maxPriorityFeePerGas: fees.maxPriorityFeePerGas.toString() };
}

/** The fees of a recorded variant. */
export function feesOf(v: { maxFeePerGas?: string; maxPriorityFeePerGas?: string; gasPrice?: string }): RefundFees {
  if (v.gasPrice !== undefined) return { kind: 'legacy', gasPrice: BigInt(v.gasPrice) };
  return { kind: 'eip1559', maxFeePerGas: BigInt(v.maxFeePerGas ?? '0'), maxPriorityFeePerGas: BigInt(v.maxPriorityFeePerGas ?? '0') };
}

/** The gas limit of a refund from an estimate: exactly 21,000 for a plain transfer, else a quarter more (a contract's receive may vary). */
export function gasLimit(estimate: bigint): bigint {
  return estimate <= 21_000n ? 21_000n : (estimate * 5n + 3n) / 4n;
}

/**
 * How far a token refund's fees may rise over its first transaction's (its most cost, gas × fee
 * cap): the gas account pays them, not the row, so the cap is a multiple of where it started
 * (four times: about twelve replacements at +12.5 %), then the row is held `fee-cap`.
 */
export const TOKEN_FEE_CAP_MULTIPLE = 4n;

/** Whether a token refund's next transaction, of most cost `next`, stays within its cap over its first one's `first`. */
export function withinTokenFeeCap(first: bigint, next: bigint): boolean {
  return next <= TOKEN_FEE_CAP_MULTIPLE * first;
}
