import type { Deposit, DepositTarget } from './execution-state';

/**
 * Whether the chain backs a reported deposit to an on-chain target (decision 0071): a report,
 * from the deposit route or a `depositCompleted` signal, is believed only when the chain shows
 * the transfer itself. Pure: lib/chain-transaction.ts reads the facts, the API and the worker's
 * activity judge them here.
 */

/** An EVM transaction hash: no other string names a transaction the chain can hold. */
export const TX_HASH = /^0x[0-9a-fA-F]{64}$/;

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
  /** The sender, lowercase. */
  from?: string;
}

export type DepositProof =
  { ok: true; deposit: Deposit; sender?: string } | { ok: false; reason: DepositDisproof; message: string; retryable: boolean };

export type DepositDisproof = 'wrong-chain' | 'not-top-level' | 'not-found' | 'failed' | 'other-address' | 'no-value' | 'unconfirmed';

const MESSAGES: Record<DepositDisproof, string> = {
  'wrong-chain': "the deposit's chain is not the execution's deposit chain",
  'not-top-level': 'only top-level native transfers (transferIndex 0) can be proven on this chain',
  'not-found': 'the chain holds no transaction with this txHash',
  failed: 'the transaction reverted on the chain',
  'other-address': "the transaction does not pay the execution's deposit address",
  'no-value': 'the transaction moves no value',
  unconfirmed: 'the transaction is not yet DEPOSIT_CONFIRMATIONS deep; report it again once it is',
};

/**
 * Judges `reported` against what the chain holds: the transaction `tx` succeeded, pays
 * `target.address` some value, and its block is `confirmations` deep under `head`. The believed
 * deposit carries the chain's amount and block, never the reported ones; whether that amount is
 * enough is the execution's rule (applyDeposit: less than minAmount is refused and owed back,
 * since the money did arrive).
 * `retryable` says whether the same report may be believed later (not yet deep enough, or a node
 * that has not seen the transaction yet).
 */
export function proveDeposit(
  target: DepositTarget,
  reported: Deposit,
  tx: ChainTransaction | undefined,
  head: number,
  confirmations: number,
): DepositProof {
  const refuse = (reason: DepositDisproof): DepositProof => ({
    ok: false,
    reason,
    message: MESSAGES[reason],
    retryable: reason === 'unconfirmed' || reason === 'not-found',
  });
  if (reported.chain !== undefined && reported.chain !== target.chain) return refuse('wrong-chain');
  if ((reported.transferIndex ?? 0) !== 0) return refuse('not-top-level');
  if (tx === undefined || !TX_HASH.test(reported.txHash)) return refuse('not-found');
  if (tx.blockNumber === null) return refuse('unconfirmed');
  if (!tx.succeeded) return refuse('failed');
  if (tx.to === null || tx.to.toLowerCase() !== target.address.toLowerCase()) return refuse('other-address');
  if (tx.value === '0') return refuse('no-value');
  if (head - tx.blockNumber + 1 < confirmations) return refuse('unconfirmed');
  return {
    ok: true,
    deposit: {
      txHash: reported.txHash.toLowerCase(),
      chain: target.chain,
      amount: tx.value,
      blockNumber: tx.blockNumber,
      transferIndex: 0,
    },
    ...(tx.from === undefined ? {} : { sender: tx.from }),
  };
}
