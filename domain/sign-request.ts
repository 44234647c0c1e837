/**
 * What the service asks its signer to sign, and when a signer that keeps its keys apart (the
 * signer service, a KMS adapter) refuses, pure (docs/decisions/0100): it signs only what the
 * refunds ledger says, a refund of rows to their destination for at most their money, a cancel of
 * their nonce, a gas top-up of a token row's deposit address for at most its refund's fee.
 */
import { encodeFunctionData, erc20Abi, type Hex } from 'viem';
import { moneyLeft } from './refund-batch';
import { isTokenAsset, refundDestination, type RefundRowFacts, type RefundSourceFacts } from './refund-policy';
import type { KeyDerivation } from './deposit-key';
import { evmChainId } from './deposit-key';

/** Which deposit address's key: its execution on a chain, and how the key derives. */
export interface DepositKeyRef {
  chain: string;
  workflowId: string;
  derivation: KeyDerivation;
}

/** A transaction to sign, as JSON carries it (integers as decimal strings). */
export interface UnsignedTx {
  chainId: number;
  nonce: number;
  /** Lowercase or EIP-55. */
  to: string;
  value: string;
  gas: string;
  data?: Hex;
  maxFeePerGas?: string;
  maxPriorityFeePerGas?: string;
  gasPrice?: string;
}

/** One signature: a refund or a cancel from a deposit address (`rows`: the ledger rows its nonce pays), or a gas account's top-up for refund row `refund`. */
export type SignRequest =
  | { kind: 'refund' | 'cancel'; key: DepositKeyRef; rows: string[]; tx: UnsignedTx }
  | { kind: 'top-up'; chain: string; refund: string; tx: UnsignedTx };

/** What the ledger says of a row, as the signer checks a request against it. */
export interface SignRowFacts extends RefundRowFacts {
  id: string;
  workflowId: string;
  state: string;
  feesSpent?: string;
  refundNonce?: number;
  refundBlock?: number;
  /** Its newest variant's most cost (gas × fee cap, wei), once signed. */
  newestMostCost?: bigint;
}

/** What the ledger says of a deposit address. */
export interface SignSourceFacts extends RefundSourceFacts {
  chain: string;
  /** Lowercase. */
  address: string;
  workflowId: string;
  noncesMined: number;
}

const mostCost = (tx: UnsignedTx): bigint => BigInt(tx.gas) * BigInt(tx.maxFeePerGas ?? tx.gasPrice ?? '0');

/**
 * Why a refund or cancel request is refused against the ledger (`source`: the deposit address of
 * the request's key; `rows`: the rows it names, as the ledger holds them), or undefined when it
 * may be signed. A refund pays the rows' destination their money at most (native: value and its
 * most cost within their money; a token: a `transfer` of their amounts' sum); a cancel sends
 * nothing to the address itself; either at the nonce the ledger expects.
 */
export function refundRefusal(
  request: Extract<SignRequest, { kind: 'refund' | 'cancel' }>,
  source: SignSourceFacts,
  rows: readonly SignRowFacts[],
): string | undefined {
  const { tx, key } = request;
  if (source.workflowId !== key.workflowId || source.chain !== key.chain) return 'the key is not the deposit address of these rows';
  if (tx.chainId !== evmChainId(key.chain)) return `chain id ${tx.chainId} is not ${key.chain}'s`;
  if (rows.length === 0 || rows.length !== request.rows.length) return 'a row named is not in the ledger';
  if (rows.some((r) => r.workflowId !== source.workflowId || r.chain !== source.chain)) return 'a row named is not of this deposit address';
  if (rows.some((r) => r.refundBlock !== undefined)) return "a row's nonce is mined already";
  const nonces = new Set(rows.map((r) => r.refundNonce));
  if (nonces.size !== 1) return 'the rows do not share one nonce';
  const nonce = rows[0].refundNonce ?? source.noncesMined;
  if (tx.nonce !== nonce) return `nonce ${tx.nonce} is not the ledger's ${nonce}`;
  const native = rows.every((r) => (r.asset ?? 'native') === 'native');
  const money = rows.reduce((sum, r) => sum + moneyLeft(r), 0n);
  if (request.kind === 'cancel') {
    if (rows[0].refundNonce === undefined) return 'a cancel of a nonce the ledger never signed';
    if (tx.to.toLowerCase() !== source.address || BigInt(tx.value) !== 0n || tx.data !== undefined)
      return 'a cancel sends nothing, to the address itself';
    if (native && mostCost(tx) > money) return "a cancel costing more than the rows' money";
    return undefined;
  }
  if (rows.some((r) => r.state !== 'due' && r.state !== 'paying' && r.state !== 'held')) return 'a row is not owed';
  const destinations = new Set(rows.map((r) => JSON.stringify(refundDestination(r, source))));
  const destination = refundDestination(rows[0], source);
  if (destinations.size !== 1 || !('to' in destination)) return 'the rows have no one destination';
  const asset = rows[0].asset ?? 'native';
  if (rows.some((r) => (r.asset ?? 'native').toLowerCase() !== asset.toLowerCase())) return 'the rows are of different assets';
  if (isTokenAsset(asset)) {
    const sum = rows.reduce((total, r) => total + BigInt(r.amount ?? '0'), 0n);
    const data = encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [destination.to as Hex, sum] });
    if (
      tx.to.toLowerCase() !== asset.slice('erc20:'.length).toLowerCase() ||
      BigInt(tx.value) !== 0n ||
      tx.data?.toLowerCase() !== data.toLowerCase()
    )
      return "a token refund is a transfer of the rows' amounts to their destination";
    return undefined;
  }
  if (tx.to.toLowerCase() !== destination.to.toLowerCase() || tx.data !== undefined) return "a refund goes to the rows' destination";
  if (BigInt(tx.value) + mostCost(tx) > money) return "a refund paying or costing more than the rows' money";
  return undefined;
}

/** Why a top-up request is refused against its refund row and that row's deposit address, or undefined. */
export function topUpRefusal(
  request: Extract<SignRequest, { kind: 'top-up' }>,
  source: SignSourceFacts | undefined,
  row: SignRowFacts | undefined,
): string | undefined {
  const { tx } = request;
  if (!row || !source || row.chain !== request.chain) return 'no such refund row on this chain';
  if (tx.chainId !== evmChainId(request.chain)) return `chain id ${tx.chainId} is not ${request.chain}'s`;
  if (!isTokenAsset(row.asset)) return 'only a token refund is topped up';
  // Paying, held at its fee cap, or voided with its cancel to send: a transaction of it is out.
  if (row.refundNonce === undefined || row.refundBlock !== undefined) return 'no transaction of its refund is out';
  if (tx.to.toLowerCase() !== source.address || tx.data !== undefined) return 'a top-up goes to the row’s deposit address';
  if (row.newestMostCost === undefined || BigInt(tx.value) > row.newestMostCost) return "a top-up of more than its refund's fee";
  return undefined;
}
