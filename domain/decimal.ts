/**
 * A non-negative decimal integer written with digits only (no sign, exponent, fraction or blank),
 * within Number's safe range; undefined for anything else. Config, env and command-line parsers
 * share it so that `1e3`, `0x10`, `-1` and `12abc` are refused the same way everywhere.
 */
export function parseDecimalInteger(text: string): number | undefined {
  if (!/^\d{1,15}$/.test(text)) return undefined;
  return Number(text);
}
