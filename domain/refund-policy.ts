/**
 * Which ledger rows the service pays back by itself, pure (docs/decisions/0081): the facts of the
 * row and of its deposit address decide where the money goes, or why a person must decide.
 */
import type { PayerKind } from './payer-kind';
import type { HoldReason } from './refund-states';

/**
 * Why `address` (lowercase or EIP-55) can never receive a refund, or undefined: the zero address
 * (what is sent there is burnt) and the precompiles `0x…01`–`0x…ff` (value sent to them stays there;
 * a token transfer to them may revert). Where the chain has no code at such an address today,
 * a later hard fork may put some.
 */
export function unreceivableAddress(address: string): string | undefined {
  const digits = address.toLowerCase().replace(/^0x/, '');
  if (!/^0{38}[0-9a-f]{2}$/.test(digits)) return undefined;
  return digits === '0'.repeat(40) ? 'is the zero address' : 'is a precompile address (0x…01 to 0x…ff)';
}

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
  /** The transfer's transaction (lowercase): the owner's refund address covers its own deposit's. */
  txHash?: string;
}

/** What the refunder knows of the deposit address of a row. */
export interface RefundSourceFacts {
  /** prepare's deposit.refundAddress (lowercase), if it named one. */
  refundAddress?: string;
  /**
   * The refund address the execution's owner set by a signed command (lowercase): it covers the
   * execution's own deposit (`txHash`) and the transfers of that deposit's payer, never another
   * payer's (decision 0098).
   */
  owner?: { address: string; payer?: string; txHash: string };
}

/**
 * The deployment's rules per asset (base units), from REFUND_LIMITS and REFUND_MINIMUMS: `limit`
 * the most a row may be paid back without a person (undefined: none set, every row held),
 * `minimum` the least the service pays back (undefined: none). `gasAccount`: whether the worker
 * has a gas account to pay token refunds' fees with.
 */
export interface RefundRules {
  limit: (chain: string, asset: string) => bigint | undefined;
  minimum: (chain: string, asset: string) => bigint | undefined;
  gasAccount: boolean;
}

/** Whether `asset` is a token (`erc20:<address>`): its refund is a `transfer` call, its fee paid by the gas account. */
export const isTokenAsset = (asset: string | undefined): asset is `erc20:${string}` => asset?.startsWith('erc20:') === true;

/**
 * Where a refund of `row` goes: the owner's refund address for the transfers it covers, else the
 * execution's refundAddress, else the transfer's payer when the
 * chain showed one and it is not a contract (a relayer, forwarder or contract wallet may never
 * hand the money to a person). Or why it may not be paid automatically.
 */
export function refundDestination(row: RefundRowFacts, source: RefundSourceFacts): { to: string } | { hold: HoldReason } {
  const owner = source.owner;
  if (owner && (row.txHash?.toLowerCase() === owner.txHash || (owner.payer !== undefined && row.sender?.toLowerCase() === owner.payer)))
    return unreceivableAddress(owner.address) === undefined ? { to: owner.address } : { hold: 'refund-address-refused' };
  // A refundAddress accepted before prepare refused such addresses is never paid to.
  if (source.refundAddress !== undefined)
    return unreceivableAddress(source.refundAddress) === undefined ? { to: source.refundAddress } : { hold: 'refund-address-refused' };
  if (row.sender === undefined || unreceivableAddress(row.sender) !== undefined) return { hold: 'no-destination' };
  if (row.payerKind === 'contract') return { hold: 'contract-payer' };
  return { to: row.sender };
}

/**
 * Whether a row is dust the moment it is written (`too-small`), from its amount alone: below its
 * asset's minimum, or, for the chain's coin, below `nativeFloor` (REFUND_MIN_FEE_MULTIPLE times
 * the most a plain transfer costs at the fees of the moment). Such a row is held without a refund
 * workflow or a webhook: money an outsider scatters costs the service nothing. Undefined when the
 * row may be paid (it is judged again, with its own gas estimate, right before signing).
 */
export function dustAtWrite(
  row: { chain?: string; amount?: string; asset?: string },
  minimum: RefundRules['minimum'],
  nativeFloor?: bigint,
): 'too-small' | undefined {
  if (row.chain === undefined || row.amount === undefined) return undefined;
  const asset = row.asset ?? 'native';
  const amount = BigInt(row.amount);
  const min = minimum(row.chain, asset);
  if (min !== undefined && amount < min) return 'too-small';
  if (asset === 'native' && nativeFloor !== undefined && amount < nativeFloor) return 'too-small';
  return undefined;
}

/**
 * Why `row` must wait for a person before anything is signed, read from the ledger alone; undefined
 * when the refunder may go on (fees, depth and the nonce are checked on the chain after this). A
 * person's approval lifts the limit, nothing else.
 */
export function holdBeforeSigning(row: RefundRowFacts, source: RefundSourceFacts, rules: RefundRules): HoldReason | undefined {
  if (row.chain === undefined || row.amount === undefined) return 'off-chain';
  const asset = row.asset ?? 'native';
  if (asset !== 'native' && !isTokenAsset(asset)) return 'off-chain';
  // A dust batch sums transfers of many payers: no one destination is owed all of it.
  if (row.transfers > 1) return 'too-small';
  const destination = refundDestination(row, source);
  if ('hold' in destination) return destination.hold;
  const amount = BigInt(row.amount);
  const min = rules.minimum(row.chain, asset);
  if (min !== undefined && amount < min) return 'too-small';
  const max = rules.limit(row.chain, asset);
  if (row.approvedBy === undefined && (max === undefined || amount > max)) return 'above-limit';
  if (isTokenAsset(asset) && !rules.gasAccount) return 'no-gas-key';
  return undefined;
}
