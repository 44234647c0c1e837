/** A non-negative decimal integer without leading zeros (wei), as prepare and the chain watcher write amounts. */
export const WEI = /^(0|[1-9][0-9]{0,77})$/;

/** Whether `amount` is at least `minimum`, both decimal strings of wei (checked with WEI first), compared as BigInt. */
export function atLeast(amount: string, minimum: string): boolean {
  return BigInt(amount) >= BigInt(minimum);
}
