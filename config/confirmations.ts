import { parseDecimalInteger } from '../domain/decimal';
import { ConfigError } from './config-error';

/**
 * How many blocks a deposit's block needs, counting itself, before the chain watcher signals it:
 * DEPOSIT_CONFIRMATIONS as set (one number for any chain, or `evm:<chainId>=N` pairs), then the
 * table below. A chain named in neither has no number: its watcher does not start, since a
 * guess too small lets a reorg take back a deposit the execution already went on with.
 */
export interface ConfirmationsRule {
  /** A plain DEPOSIT_CONFIRMATIONS=N: the operator's number for whatever chain CHAIN_RPC_URL serves. */
  readonly anyChain?: number;
  /** `evm:<chainId>=N` pairs of DEPOSIT_CONFIRMATIONS. */
  readonly byChain: Readonly<Record<string, number>>;
}

/**
 * The numbers for chains whose finality is known, when DEPOSIT_CONFIRMATIONS does not say
 * (docs/configuration.md "Deposit confirmations per chain"). Ethereum finalises a block two epochs
 * (64 blocks, about 13 minutes) after it; its test networks are given 12; the local dev chains
 * (anvil and Hardhat's 31337, Geth's and Ganache's 1337) are never reorganised by anyone else.
 */
export const DEFAULT_CONFIRMATIONS: Readonly<Record<string, number>> = Object.freeze({
  'evm:1': 64,
  'evm:11155111': 12,
  'evm:17000': 12,
  'evm:31337': 2,
  'evm:1337': 2,
});

export const MAX_CONFIRMATIONS = 1000;

const PAIR = /^(evm:\d+)=(.+)$/;

/** DEPOSIT_CONFIRMATIONS parsed (unset: only the table); a ConfigError names what is wrong. */
export function parseConfirmations(text: string | undefined): ConfirmationsRule {
  if (text === undefined || text.trim() === '') return { byChain: {} };
  const count = (raw: string, what: string) => {
    const n = parseDecimalInteger(raw.trim());
    if (n === undefined || n < 1 || n > MAX_CONFIRMATIONS)
      throw new ConfigError(`DEPOSIT_CONFIRMATIONS: ${what} must be an integer of 1..${MAX_CONFIRMATIONS}, got ${JSON.stringify(raw)}`);
    return n;
  };
  if (!text.includes('=')) return { anyChain: count(text, 'the number'), byChain: {} };
  const byChain: Record<string, number> = {};
  for (const item of text.split(',').map((s) => s.trim())) {
    if (item === '') continue;
    const pair = PAIR.exec(item);
    if (!pair) throw new ConfigError(`DEPOSIT_CONFIRMATIONS: ${JSON.stringify(item)} is not evm:<chainId>=N`);
    if (pair[1] in byChain) throw new ConfigError(`DEPOSIT_CONFIRMATIONS names ${pair[1]} twice`);
    byChain[pair[1]] = count(pair[2], pair[1]);
  }
  return { byChain };
}

/** The confirmations of `chain` (`evm:<chainId>`): the operator's, else the table's, else undefined. */
export function confirmationsFor(rule: ConfirmationsRule, chain: string): number | undefined {
  return rule.byChain[chain] ?? rule.anyChain ?? DEFAULT_CONFIRMATIONS[chain];
}

/** The numbers DEPOSIT_CONFIRMATIONS sets (CHAIN_REORG_WINDOW must exceed each). */
export const explicitConfirmations = (rule: ConfirmationsRule): number[] => [
  ...(rule.anyChain === undefined ? [] : [rule.anyChain]),
  ...Object.values(rule.byChain),
];

/** Why `chain` has no confirmations, for the error that keeps its watcher from starting. */
export const noConfirmationsMessage = (chain: string) =>
  `DEPOSIT_CONFIRMATIONS gives no number for ${chain} and the table of known chains has none: set DEPOSIT_CONFIRMATIONS=${chain}=N (the chain's finality in blocks) to watch it`;
