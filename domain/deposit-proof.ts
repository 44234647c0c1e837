import type { Deposit, DepositAsset, DepositTarget } from './execution-state';
import { tokenTransfer, type LogEntry } from './transfers';

/**
 * Whether the chain backs a reported deposit to an on-chain target (decision 0071): a report,
 * from the deposit route or a `depositCompleted` signal, is believed only when the chain shows
 * the transfer itself. Pure: lib/chain-transaction.ts reads the facts, the API and the worker's
 * activity judge them here.
 */

/** An EVM transaction hash: no other string names a transaction the chain can hold. */
export const TX_HASH_PATTERN = '^0x[0-9a-fA-F]{64}$';
export const TX_HASH = new RegExp(TX_HASH_PATTERN);

/** What the chain says of one transaction (undefined when it knows none by that hash). */
export interface ChainTransaction {
  /** Recipient, lowercase; null for a contract creation. */
  to: string | null;
  /** Native value, wei as a decimal string. */
  value: string;
  /** The block that includes it; null while pending. */
  blockNumber: number | null;
  /** The receipt's status: false for a reverted transaction. */
  succeeded: boolean;
  /** The transaction's sender, lowercase: the payer of its own value (transferIndex 0) only. */
  from?: string;
  /** The receipt's logs, in order (a token transfer's transferIndex is its place among them). */
  logs?: readonly LogEntry[];
  /**
   * The value the transaction's internal calls move, in call order (domain/transfers.ts): element i
   * is transferIndex i + 1, `from` the call frame's (the contract that paid). Undefined when the
   * node has no traces (or none were asked for).
   */
  internalTransfers?: ReadonlyArray<{ from?: string; to: string; value: string }>;
}

/**
 * A believed deposit carries `sender`: the transfer's payer (payerAt), where a refund of it goes
 * back to.
 */
export type DepositProof =
  { ok: true; deposit: Deposit; sender?: string } | { ok: false; reason: DepositDisproof; message: string; retryable: boolean };

export type DepositDisproof =
  | 'wrong-chain'
  | 'token-not-allowed'
  | 'not-top-level'
  | 'not-found'
  | 'failed'
  | 'other-address'
  | 'no-value'
  | 'unconfirmed'
  | 'no-token-transfer'
  | 'service-transfer';

/** A token the deployment accepts deposits in (DEPOSIT_TOKENS): its chain and address. */
export interface AllowedToken {
  /** `evm:<chainId>`. */
  readonly chain: string;
  /** `0x` + 40 hex digits (any case). */
  readonly address: string;
}

/**
 * Whether `asset` counts as money on `chain`: `native`, or an `erc20:` token the deployment
 * allows there. Any other token is worth nothing to the service: anyone can deploy one and move
 * 2^256 − 1 of it, so a transfer of it is never a deposit nor a refund owed.
 */
export function assetAllowed(tokens: readonly AllowedToken[], chain: string, asset: string): boolean {
  if (asset === 'native') return true;
  if (!asset.startsWith('erc20:')) return false;
  const address = asset.slice('erc20:'.length).toLowerCase();
  return tokens.some((t) => t.chain === chain && t.address.toLowerCase() === address);
}

const MESSAGES: Record<DepositDisproof, string> = {
  'wrong-chain': "the deposit's chain is not the execution's deposit chain",
  'token-not-allowed': 'the asset is not native nor a token this service accepts on the chain (DEPOSIT_TOKENS)',
  'not-top-level': "an internal call's transfer (transferIndex above 0) needs the node's call traces, which it does not offer",
  'not-found': 'the chain holds no transaction with this txHash',
  failed: 'the transaction reverted on the chain',
  'other-address': "the transaction does not pay the execution's deposit address",
  'no-value': 'the transaction moves no value',
  unconfirmed: 'the transaction is not yet DEPOSIT_CONFIRMATIONS deep; report it again once it is',
  'no-token-transfer': "the transaction's log at transferIndex is no Transfer event of the deposit's token",
  'service-transfer':
    "the transfer's payer is one of the service's deposit addresses or its gas account: the service sent it (a refund, a cancel or a gas top-up), it is no deposit",
};

/** The asset a report claims: what it says, else the target's. */
export const reportedAsset = (target: DepositTarget, reported: Deposit): DepositAsset => reported.asset ?? target.asset;

/** The transfer `tx` holds at `transferIndex` in `asset`: payer, recipient and amount; undefined when it holds none. */
function movedAt(
  tx: ChainTransaction,
  asset: DepositAsset,
  transferIndex: number,
): { payer?: string; to: string | null; amount: string } | 'no-token-transfer' | 'not-top-level' | undefined {
  if (asset !== 'native') {
    const log = tx.logs?.[transferIndex];
    const transfer = log === undefined ? undefined : tokenTransfer(log);
    if (transfer === undefined || `erc20:${transfer.token}` !== asset.toLowerCase()) return 'no-token-transfer';
    return { payer: transfer.from, to: transfer.to, amount: transfer.amount };
  }
  if (transferIndex === 0) return { payer: tx.from?.toLowerCase(), to: tx.to?.toLowerCase() ?? null, amount: tx.value };
  if (tx.internalTransfers === undefined) return 'not-top-level';
  const call = tx.internalTransfers[transferIndex - 1];
  return call === undefined ? undefined : { payer: call.from?.toLowerCase(), to: call.to, amount: call.value };
}

/**
 * Who paid the transfer `tx` holds at `transferIndex` in `asset` (lowercase): where a refund of it
 * goes back to. A token's is its `Transfer` log's `from` (a relayer's `transferFrom` moves the
 * owner's tokens); native value moved by an internal call, the call frame's `from` (the contract
 * wallet or forwarder that paid); the transaction's own value (transferIndex 0), `tx.from`.
 * Undefined when `tx` holds no such transfer, or the facts to tell were not read (no traces).
 */
export function payerAt(tx: ChainTransaction, asset: DepositAsset, transferIndex: number): string | undefined {
  const moved = movedAt(tx, asset, transferIndex);
  return typeof moved === 'object' ? moved.payer : undefined;
}

/**
 * What `tx` moves to `address` at `transferIndex` in `asset`: the amount (base units) and its
 * payer, or the reason it is no such transfer.
 */
function transferAt(
  tx: ChainTransaction,
  asset: DepositAsset,
  transferIndex: number,
  address: string,
): { amount: string; payer?: string } | { refusal: 'not-top-level' | 'other-address' | 'no-value' | 'no-token-transfer' } {
  const moved = movedAt(tx, asset, transferIndex);
  if (typeof moved === 'string') return { refusal: moved };
  if (moved === undefined || moved.to !== address.toLowerCase()) return { refusal: 'other-address' };
  // An internal call moves value by definition (domain/transfers.ts keeps only those that do).
  if (moved.amount === '0') return { refusal: 'no-value' };
  return moved.payer === undefined ? { amount: moved.amount } : { amount: moved.amount, payer: moved.payer };
}

/**
 * Judges `reported` against what the chain holds: the asset is native or a token of `tokens` (the
 * deployment's DEPOSIT_TOKENS) on the target's chain, the transaction `tx` succeeded, pays
 * `target.address` some value of the reported asset (the target's when the report does not say;
 * another asset is proven too, and the execution refuses it as `wrong-asset`: that money did
 * arrive) at the reported transferIndex, and its block is `confirmations` deep under `head`. The believed
 * deposit carries the chain's amount and block, never the reported ones; whether that amount is
 * enough is the execution's rule (applyDeposit: less than minAmount is refused and owed back,
 * since the money did arrive).
 * `retryable` says whether the same report may be believed later (not yet deep enough, or a node
 * that has not seen the transaction yet).
 * `servicePayers` holds those of the chain's deposit addresses and gas accounts (lowercase) that
 * may be the transfer's payer (proveOnChain asks the read model for its payer): a transfer one of
 * them paid was signed by the service, its own refund, cancel or gas top-up, and is refused as
 * `service-transfer`, for good, whatever it moved.
 */
export function proveDeposit(
  target: DepositTarget,
  reported: Deposit,
  tx: ChainTransaction | undefined,
  head: number,
  confirmations: number,
  tokens: readonly AllowedToken[],
  servicePayers: ReadonlySet<string> = new Set(),
): DepositProof {
  const refuse = (reason: DepositDisproof): DepositProof => ({
    ok: false,
    reason,
    message: MESSAGES[reason],
    retryable: reason === 'unconfirmed' || reason === 'not-found',
  });
  if (reported.chain !== undefined && reported.chain !== target.chain) return refuse('wrong-chain');
  if (!assetAllowed(tokens, target.chain, reportedAsset(target, reported))) return refuse('token-not-allowed');
  if (tx === undefined || !TX_HASH.test(reported.txHash)) return refuse('not-found');
  if (tx.blockNumber === null) return refuse('unconfirmed');
  if (!tx.succeeded) return refuse('failed');
  const asset = reportedAsset(target, reported);
  const transferIndex = reported.transferIndex ?? 0;
  const moved = transferAt(tx, asset, transferIndex, target.address);
  if ('refusal' in moved) return refuse(moved.refusal);
  if (moved.payer !== undefined && servicePayers.has(moved.payer.toLowerCase())) return refuse('service-transfer');
  if (head - tx.blockNumber + 1 < confirmations) return refuse('unconfirmed');
  return {
    ok: true,
    deposit: {
      txHash: reported.txHash.toLowerCase(),
      chain: target.chain,
      amount: moved.amount,
      blockNumber: tx.blockNumber,
      transferIndex,
      asset: asset === 'native' ? 'native' : (asset.toLowerCase() as DepositAsset),
    },
    ...(moved.payer === undefined ? {} : { sender: moved.payer }),
  };
}
