/**
 * What a transaction moves, read off its receipt's logs and its call trace: the ERC-20 `Transfer`
 * logs and the value its internal calls send. Pure: the chain watcher and the deposit proof both
 * number transfers this way, so a watcher's `transferIndex` names the same transfer a proof finds.
 */

/** keccak-256 of `Transfer(address,address,uint256)`: the standard ERC-20 event's topic 0. */
export const TRANSFER_TOPIC = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';

/** A log as a receipt holds it. */
export interface LogEntry {
  address: string;
  topics: readonly string[];
  data: string;
}

/** An address as a 32-byte topic (`0x` + 24 zero digits + the address, lowercase). */
export const addressTopic = (address: string) => `0x${'0'.repeat(24)}${address.slice(2).toLowerCase()}`;

const WORD = /^0x[0-9a-fA-F]{64}$/;

/**
 * The token, payer, recipient (both lowercase) and amount of a standard `Transfer` log; undefined
 * for any other log. The payer is the log's `from` (topic 1): whose balance the token moved, not
 * whoever sent the transaction (a relayer's `transferFrom`, a contract wallet's call).
 */
export function tokenTransfer(log: LogEntry): { token: string; from: string; to: string; amount: string } | undefined {
  if (log.topics.length !== 3 || log.topics[0].toLowerCase() !== TRANSFER_TOPIC) return undefined;
  if (!WORD.test(log.topics[1]) || !WORD.test(log.topics[2]) || !WORD.test(log.data)) return undefined;
  return {
    token: log.address.toLowerCase(),
    from: `0x${log.topics[1].slice(26).toLowerCase()}`,
    to: `0x${log.topics[2].slice(26).toLowerCase()}`,
    amount: BigInt(log.data).toString(),
  };
}

/** A call frame as geth's `callTracer` (and anvil's) answers it. */
export interface CallFrame {
  type: string;
  /** The address whose value the frame moves (the caller; for a DELEGATECALL's calls, the delegating contract). */
  from?: string;
  to?: string;
  value?: string;
  error?: string;
  calls?: CallFrame[];
}

/**
 * The value a transaction's internal calls move, in call order (depth first): element i is the
 * transfer with `transferIndex` i + 1 (0 is the transaction's own value). Only `CALL` and
 * `SELFDESTRUCT` frames move value to their `to`; a frame that failed (and everything under it)
 * moved nothing. `from` is the frame's: the contract that paid (a Forwarder, a Safe), not the
 * transaction's sender. A frame without one (geth's and anvil's tracers always name it) is paid by
 * the account whose code runs around it: the parent's `to`, or under a DELEGATECALL or CALLCODE
 * the delegating account; unset when no frame names it.
 */
export function internalValueTransfers(root: CallFrame): Array<{ from?: string; to: string; value: string }> {
  const out: Array<{ from?: string; to: string; value: string }> = [];
  const walk = (frame: CallFrame, account: string | undefined) => {
    for (const call of frame.calls ?? []) {
      if (call.error !== undefined) continue;
      const from = (call.from ?? account)?.toLowerCase();
      const value = call.value === undefined ? 0n : BigInt(call.value);
      if ((call.type === 'CALL' || call.type === 'SELFDESTRUCT') && call.to !== undefined && value > 0n)
        out.push({ ...(from === undefined ? {} : { from }), to: call.to.toLowerCase(), value: value.toString() });
      const delegated = call.type === 'DELEGATECALL' || call.type === 'CALLCODE';
      walk(call, delegated ? from : (call.to ?? from));
    }
  };
  if (root.error === undefined) walk(root, root.to);
  return out;
}
