/** The refunds ledger's vocabulary, named once for the ledger, the refunder, the API, the SDK and the docs. */

/**
 * A row's states, named once (docs/decisions/0081):
 * - `due`: owed back, the refunder pays it (or holds it);
 * - `held`: owed back by a person (`holdReason` says why);
 * - `paying`: the refunder signed a transaction for it (its nonce and every signed variant are on
 *   the row); nobody settles it by hand until the nonce is mined;
 * - `refunded`: paid back (`refundTxHash`; by the service: `refundBlock`, `refundValue`);
 * - `waived`: a person decided nothing is paid back;
 * - `void`: a chain reorganisation removed its transfer (nothing is owed; `due` again if the same
 *   transfer is mined again).
 */
export const REFUND_STATES = ['due', 'held', 'paying', 'refunded', 'waived', 'void'] as const;
export type RefundState = (typeof REFUND_STATES)[number];

/** The states a row leaves without a reorganisation: an execution's event stream stays open while one of its rows is in them. */
export const OPEN_REFUND_STATES: readonly RefundState[] = ['due', 'held', 'paying'];

/**
 * Why a row waits for a person instead of being paid back automatically (`held`), named once for
 * the ledger, the API, the SDK and the docs:
 * - `no-destination`: neither a refundAddress nor a payer the chain showed;
 * - `contract-payer`: no refundAddress, and the payer has code (a relayer or a contract wallet may
 *   never hand the money to a person);
 * - `too-small`: a dust batch, an amount below its asset's REFUND_MINIMUMS, or a native amount
 *   below REFUND_MIN_FEE_MULTIPLE times its fee;
 * - `above-limit`: above its asset's REFUND_LIMITS (an asset without one holds every row);
 * - `off-chain`: no chain, no amount, or no deposit address the service holds the key of;
 * - `no-gas-key`: a token refund, and the worker has no gas account (REFUND_GAS_KEY_FILE) to pay
 *   its fee;
 * - `refund-address-refused`: the refundAddress became an address the service pays from;
 * - `no-key`: the worker's deposit seed does not derive the deposit address;
 * - `nonce-mismatch`: the address's nonce is not the number of refunds mined from it (a spend by
 *   hand, a restored backup): automatic refunds from that address stop;
 * - `reverted`: the refund was mined with status 0 (its nonce is used; never re-sent);
 * - `no-transfer-log`: a token refund was mined without the token's `Transfer` log of the amount
 *   to its destination (its nonce is used; never re-sent: a person reads the token);
 * - `fee-cap`: not mined with fees up to the row's fee cap;
 * - `refund-reverts`: the refund transaction reverts when the node simulates it, look after look
 *   (the destination's code refuses the money, or the token refuses the transfer: paused,
 *   blacklisted); nothing is signed, the address's other rows go on.
 */
export const HOLD_REASONS = [
  'no-destination',
  'contract-payer',
  'too-small',
  'above-limit',
  'off-chain',
  'no-gas-key',
  'refund-address-refused',
  'no-key',
  'nonce-mismatch',
  'reverted',
  'no-transfer-log',
  'fee-cap',
  'refund-reverts',
] as const;
export type HoldReason = (typeof HOLD_REASONS)[number];
