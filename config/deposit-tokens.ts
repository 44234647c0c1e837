import { ConfigError } from './config-error';
import { parseDecimalInteger } from '../domain/decimal';

/** An ERC-20 token the deployment accepts deposits in (DEPOSIT_TOKENS). */
export interface DepositToken {
  /** `evm:<chainId>`. */
  readonly chain: string;
  /** `0x` + 40 lowercase hex digits. */
  readonly address: string;
  readonly symbol: string;
  readonly decimals: number;
}

const ITEM = /^(evm:\d+):(0x[0-9a-fA-F]{40})=([A-Za-z0-9._-]{1,32}):(\d{1,2})$/;

/**
 * DEPOSIT_TOKENS parsed: comma-separated `evm:<chainId>:<address>=<SYMBOL>:<decimals>`, e.g.
 * `evm:1:0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48=USDC:6`. Unset: no token is accepted.
 * A ConfigError names the item that is wrong.
 */
export function parseDepositTokens(text: string | undefined): DepositToken[] {
  const tokens: DepositToken[] = [];
  for (const item of (text ?? '').split(',').map((s) => s.trim())) {
    if (item === '') continue;
    const m = ITEM.exec(item);
    const decimals = m ? parseDecimalInteger(m[4]) : undefined;
    if (!m || decimals === undefined || decimals > 36)
      throw new ConfigError(`DEPOSIT_TOKENS: ${JSON.stringify(item)} is not evm:<chainId>:<address>=<SYMBOL>:<decimals>`);
    const token = { chain: m[1], address: m[2].toLowerCase(), symbol: m[3], decimals };
    if (tokens.some((t) => t.chain === token.chain && t.address === token.address))
      throw new ConfigError(`DEPOSIT_TOKENS names ${token.chain}:${token.address} twice`);
    tokens.push(token);
  }
  return tokens;
}

/** The deposit asset of a token: `erc20:` + its lowercase address. */
export const tokenAsset = (address: string) => `erc20:${address.toLowerCase()}`;

/** The token `asset` names on `chain`, if the deployment allows it. */
export function allowedToken(tokens: readonly DepositToken[], chain: string, asset: string): DepositToken | undefined {
  if (!asset.startsWith('erc20:')) return undefined;
  const address = asset.slice('erc20:'.length).toLowerCase();
  return tokens.find((t) => t.chain === chain && t.address === address);
}
