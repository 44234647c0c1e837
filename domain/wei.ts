/**
 * Base units (wei; a token's smallest unit) as every entry point writes an amount: a canonical
 * decimal integer, `0` or digits without a leading zero (no sign, fraction, exponent or blank), at
 * most 78 digits. The one rule: the API's schemas take its pattern, the ledger and the chain
 * watcher test it with isBaseUnits.
 */
export const BASE_UNITS_PATTERN = '^(0|[1-9][0-9]{0,77})$';

/** BASE_UNITS_PATTERN as a RegExp (a non-negative decimal integer without leading zeros). */
export const WEI = new RegExp(BASE_UNITS_PATTERN);

/** The largest amount a transfer can carry: 2^256 − 1 (an EVM word). */
export const MAX_BASE_UNITS = (BigInt(1) << BigInt(256)) - BigInt(1);

/** Whether `s` is base units: canonical (WEI) and at most 2^256 − 1. */
export function isBaseUnits(s: unknown): s is string {
  return typeof s === 'string' && WEI.test(s) && BigInt(s) <= MAX_BASE_UNITS;
}

/** Whether `amount` is at least `minimum`, both decimal strings of wei (checked with WEI first), compared as BigInt. */
export function atLeast(amount: string, minimum: string): boolean {
  return BigInt(amount) >= BigInt(minimum);
}
