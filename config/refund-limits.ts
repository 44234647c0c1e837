import { ConfigError } from './config-error';
import type { DepositToken } from './deposit-tokens';

/**
 * Amounts per asset (REFUND_LIMITS, REFUND_MINIMUMS), in the asset's base units (wei, or the
 * token's smallest unit): `<asset>=<amount>` items, comma-separated, where `<asset>` is
 * `evm:<chainId>` for the chain's native coin and `evm:<chainId>:<token address>` or
 * `evm:<chainId>:<SYMBOL>` (a symbol of DEPOSIT_TOKENS on that chain) for a token.
 * Keys are kept as written (a token address lowercase); `amountFor` resolves them.
 */
export type AssetAmounts = Readonly<Record<string, bigint>>;

/**
 * The most a refunds ledger row is paid back without a person, when REFUND_LIMITS does not say:
 * on the local dev chains (anvil and Hardhat's 31337, Geth's and Ganache's 1337) 1 ETH and 1,000
 * tUSD (the test token `npm start` deploys, 6 decimals). An asset named nowhere has no limit:
 * every row of it is held `above-limit`, since a deployment that never said what a program may
 * pay in an asset of real money must not find out from its ledger.
 */
export const DEFAULT_REFUND_LIMITS: AssetAmounts = Object.freeze({
  'evm:31337': 10n ** 18n,
  'evm:1337': 10n ** 18n,
  'evm:31337:tUSD': 1000n * 10n ** 6n,
  'evm:1337:tUSD': 1000n * 10n ** 6n,
});

/**
 * The least a row is paid back by the service when REFUND_MINIMUMS does not say: 0.01 tUSD on the
 * dev chains. A native row has none by default (REFUND_MIN_FEE_MULTIPLE holds native dust); a
 * token refund's fee is paid by the gas account, so only a minimum holds token dust.
 */
export const DEFAULT_REFUND_MINIMUMS: AssetAmounts = Object.freeze({
  'evm:31337:tUSD': 10_000n,
  'evm:1337:tUSD': 10_000n,
});

const ITEM = /^(evm:[1-9][0-9]*)(?::(0x[0-9a-fA-F]{40}|[A-Za-z0-9._-]{1,32}))?=([0-9]{1,78})$/;

/** REFUND_LIMITS or REFUND_MINIMUMS (named `setting`) parsed (unset: none); a ConfigError names what is wrong. */
export function parseAssetAmounts(setting: string, text: string | undefined): AssetAmounts {
  const amounts: Record<string, bigint> = {};
  if (text === undefined || text.trim() === '') return amounts;
  for (const item of text.split(',').map((s) => s.trim())) {
    if (item === '') continue;
    const m = ITEM.exec(item);
    if (!m)
      throw new ConfigError(`${setting}: ${JSON.stringify(item.slice(0, 100))} is not evm:<chainId>[:<token address or symbol>]=<amount>`);
    const token = m[2] === undefined ? undefined : m[2].startsWith('0x') ? m[2].toLowerCase() : m[2];
    const key = token === undefined ? m[1] : `${m[1]}:${token}`;
    if (key in amounts) throw new ConfigError(`${setting} names ${key} twice`);
    amounts[key] = BigInt(m[3]);
  }
  return amounts;
}

/**
 * The amount `amounts` (then `defaults`) gives `asset` on `chain`: `native` by the chain's key, a
 * token (`erc20:<address>`) by its address or by its DEPOSIT_TOKENS symbol; undefined when neither
 * names it.
 */
export function amountFor(
  amounts: AssetAmounts,
  defaults: AssetAmounts,
  tokens: readonly DepositToken[],
  chain: string,
  asset: string,
): bigint | undefined {
  const keys: string[] = [];
  if (asset === 'native') keys.push(chain);
  else if (asset.startsWith('erc20:')) {
    const address = asset.slice('erc20:'.length).toLowerCase();
    keys.push(`${chain}:${address}`);
    const symbol = tokens.find((t) => t.chain === chain && t.address === address)?.symbol;
    if (symbol !== undefined) keys.push(`${chain}:${symbol}`);
  }
  for (const table of [amounts, defaults]) for (const key of keys) if (key in table) return table[key];
  return undefined;
}
