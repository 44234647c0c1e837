/**
 * Which ledger rows the service pays back by itself, pure (docs/decisions/0081): the facts of the
 * row and of its deposit address decide where the money goes, or why a person must decide.
 */
import type { PayerKind } from './payer-kind';
import type { HoldReason } from './refund-states';

/** What the policy reads of a ledger row. */
export interface RefundRowFacts {
  chain?: string;
  /** Base units, a decimal string. */
  amount?: string;
  asset?: string;
  /** How many transfers it stands for (above 1: a dust batch). */
  transfers: number;
  /** The transfer's payer (lowercase), when the chain showed it. */
  sender?: string;
  payerKind?: PayerKind;
  /** Set when a person approved paying it above the chain's limit. */
  approvedBy?: string;
}

/** What the refunder knows of the deposit address of a row. */
export interface RefundSourceFacts {
  /** prepare's deposit.refundAddress (lowercase), if it named one. */
  refundAddress?: string;
}

/** The deployment's rule: the most a row of `chain` may be paid back without a person (REFUND_NATIVE_LIMITS); undefined: no limit set, every row held. */
export type NativeLimit = (chain: string) => bigint | undefined;

/**
 * Where a refund of `row` goes: the execution's refundAddress, else the transfer's payer when the
 * chain showed one and it is not a contract (a relayer, forwarder or contract wallet may never
 * hand the money to a person). Or why it may not be paid automatically.
 */
export function refundDestination(row: RefundRowFacts, source: RefundSourceFacts): { to: string } | { hold: HoldReason } {
  if (source.refundAddress !== undefined) return { to: source.refundAddress };
  if (row.sender === undefined) return { hold: 'no-destination' };
  if (row.payerKind === 'contract') return { hold: 'contract-payer' };
  return { to: row.sender };
}

/**
 * Why `row` must wait for a person before anything is signed, read from the ledger alone; undefined
 * when the refunder may go on (fees, depth and the nonce are checked on the chain after this). A
 * person's approval lifts the limit, nothing else.
 */
export function holdBeforeSigning(row: RefundRowFacts, source: RefundSourceFacts, limit: NativeLimit): HoldReason | undefined {
  if (row.chain === undefined || row.amount === undefined) return 'off-chain';
  if ((row.asset ?? 'native') !== 'native') return 'token';
  // A dust batch sums transfers of many payers: no one destination is owed all of it.
  if (row.transfers > 1) return 'too-small';
  const destination = refundDestination(row, source);
  if ('hold' in destination) return destination.hold;
  const max = limit(row.chain);
  if (row.approvedBy === undefined && (max === undefined || BigInt(row.amount) > max)) return 'above-limit';
  return undefined;
}
