import { ConfigError } from './settings';

/**
 * The most a refunds ledger row of each chain is paid back without a person (REFUND_NATIVE_LIMITS),
 * in wei: `evm:<chainId>=<wei>` pairs, then the table below. A chain named in neither has no limit:
 * every row of it is held `above-limit`, since a deployment that never said what a program may pay
 * on a chain of real money must not find out from its ledger.
 */
export const DEFAULT_NATIVE_LIMITS: Readonly<Record<string, bigint>> = Object.freeze({
  // The local dev chains (anvil and Hardhat's 31337, Geth's and Ganache's 1337): 1 ETH.
  'evm:31337': 10n ** 18n,
  'evm:1337': 10n ** 18n,
});

const PAIR = /^(evm:[1-9][0-9]*)=([0-9]{1,78})$/;

/** REFUND_NATIVE_LIMITS parsed (unset: only the table); a ConfigError names what is wrong. */
export function parseNativeLimits(text: string | undefined): Readonly<Record<string, bigint>> {
  const limits: Record<string, bigint> = {};
  if (text === undefined || text.trim() === '') return limits;
  for (const item of text.split(',').map((s) => s.trim())) {
    if (item === '') continue;
    const pair = PAIR.exec(item);
    if (!pair) throw new ConfigError(`REFUND_NATIVE_LIMITS: ${JSON.stringify(item.slice(0, 100))} is not evm:<chainId>=<wei>`);
    if (pair[1] in limits) throw new ConfigError(`REFUND_NATIVE_LIMITS names ${pair[1]} twice`);
    limits[pair[1]] = BigInt(pair[2]);
  }
  return limits;
}

/** The limit of `chain`: the operator's, else the table's, else undefined (every row held). */
export function nativeLimitFor(limits: Readonly<Record<string, bigint>>, chain: string): bigint | undefined {
  return limits[chain] ?? DEFAULT_NATIVE_LIMITS[chain];
}
