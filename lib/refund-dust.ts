import type { RefundJudge } from '../contracts/refunds';
import { maxCost, type RefundFees } from '../domain/refund-fees';
import { dustAtWrite, type RefundRules } from '../domain/refund-policy';
import { isBaseUnits } from '../domain/wei';

/** How long one read of the chain's fees serves the judgements of new rows. */
const FEES_MAX_AGE_MS = 12_000;

/** The gas of a plain transfer: no refund of the chain's coin costs less. */
const TRANSFER_GAS = 21_000n;

/**
 * The worker's judgement of new rows (domain/refund-policy.ts dustAtWrite): its asset's minimum,
 * and for the chain's coin REFUND_MIN_FEE_MULTIPLE times a plain transfer's most cost at fees
 * `readFees` answers, asked at most every 12 s. A fee read that fails judges by the minimum alone:
 * the row is then written `due`, and the refunder's own check before signing holds it.
 */
export function dustJudge(minimum: RefundRules['minimum'], minFeeMultiple: number, readFees?: () => Promise<RefundFees>): RefundJudge {
  let floor: { value: bigint; at: number } | undefined;
  const nativeFloor = async (): Promise<bigint | undefined> => {
    if (!readFees) return undefined;
    if (floor && Date.now() - floor.at < FEES_MAX_AGE_MS) return floor.value;
    try {
      const value = BigInt(minFeeMultiple) * maxCost(TRANSFER_GAS, await readFees());
      floor = { value, at: Date.now() };
      return value;
    } catch {
      return undefined;
    }
  };
  return async (due) => {
    if (due.amount === undefined || !isBaseUnits(due.amount)) return undefined;
    const native = (due.asset ?? 'native') === 'native';
    return dustAtWrite(due, minimum, native ? await nativeFloor() : undefined);
  };
}
