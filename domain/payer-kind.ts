/**
 * Whether the payer of a transfer is a person's account or a contract, read from the code at its
 * address (`eth_getCode`). Pure: lib/chain-transaction.ts reads the code. A refund to a contract
 * payer (a Safe, an ERC-4337 account, a forwarder, a relayer's contract) may never reach a person,
 * or reach the wrong one, so the refunds ledger marks it and paying it back can wait for one.
 */

export type PayerKind = 'eoa' | 'contract';

/** An EIP-7702 delegation designator: `0xef0100` and the 20-byte address the account delegates to. */
const DELEGATION_DESIGNATOR = /^0xef0100[0-9a-f]{40}$/i;

/**
 * The kind of an account with `code` at its address: no code is an EOA; an EIP-7702 delegation
 * designator is an EOA too (a key holds it; the code it points at only runs when it is called);
 * any other code is a contract. `undefined` (the node answered nothing) is read as no code.
 */
export function payerKind(code: string | undefined): PayerKind {
  if (code === undefined || code === '' || code === '0x') return 'eoa';
  return DELEGATION_DESIGNATOR.test(code) ? 'eoa' : 'contract';
}
