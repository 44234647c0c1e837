import type { DepositAsset } from './execution-state';

/**
 * The chain watcher's state machine (docs/decisions/0071-chain-watcher.md), as pure functions: the
 * workflow holds one WatcherState, feeds it what its activities read from the chain, and sends the
 * signals and reorg reports these functions answer. Nothing here reads the chain or a clock, so
 * property tests drive it over simulated chains with reorgs.
 *
 * - The state keeps a window of the most recent accepted blocks (number and hash, contiguous,
 *   ending at `cursor`), the transfers seen in them that are not yet deep enough (`pending`), and
 *   the ones already signalled whose block is still in the window (`signalled`).
 * - A round brings the block at `cursor` again (to notice a reorg that kept the height) and the
 *   blocks after it. Each must extend the window (same number + 1, parentHash = the tail's hash);
 *   the first that does not stops the round and asks for a rewind.
 * - A rewind is given the chain's canonical hashes of the window's numbers: the highest block whose
 *   hash still matches is the fork point. Pending transfers above it are dropped (they were never
 *   signalled); signalled ones above it are reported as reorged (deeper than the confirmations).
 * - A transfer is signalled once its block has `confirmations` blocks on top of it counting itself
 *   (cursor − blockNumber + 1 ≥ confirmations), once per `(txHash, transferIndex)`.
 */

/** A block as the watcher compares it: number, hash and parent hash (`0x` lowercase hex). */
export interface BlockHeader {
  number: number;
  hash: string;
  parentHash: string;
}

/** A block the watcher has accepted. */
export interface BlockRef {
  number: number;
  hash: string;
}

/** A transfer to a known deposit address, as the chain activity finds it. */
export interface ChainTransfer {
  blockNumber: number;
  blockHash: string;
  txHash: string;
  /**
   * The transfer's place in its transaction: 0 for a top-level native transfer, 1, 2, … for the
   * value its internal calls move (call order), a token's log: its place among the receipt's logs.
   */
  transferIndex: number;
  /** `native` or `erc20:<token address>`; unset in the state of a watcher of an older build: native. */
  asset?: DepositAsset;
  /** The deposit address, lowercase. */
  to: string;
  /** Base units of the asset (wei for native), a decimal string. */
  amount: string;
  /**
   * Who paid it, lowercase: a token's `Transfer` log `from`, an internal call's frame `from`, the
   * transaction's sender for its own value. Unset in the state of a watcher of an older build.
   */
  from?: string;
  /** The execution the address belongs to. */
  workflowId: string;
  /** Set on a signalled transfer once its block was reorganised away (reported once). */
  reorged?: true;
}

/** What the watcher sends an execution: the `depositCompleted` signal's payload and its target. */
export interface DepositSignal {
  workflowId: string;
  /** The deposit address it paid (lowercase): the dust cap counts per address. */
  to: string;
  /** Who paid it (ChainTransfer's `from`): a refund's sender. Not sent to the execution; unset from an older build's state. */
  from?: string;
  deposit: { txHash: string; chain: string; amount: string; blockNumber: number; transferIndex: number; asset: DepositAsset };
}

/** A signalled deposit whose block is no longer canonical. */
export interface ReorgReport {
  workflowId: string;
  chain: string;
  txHash: string;
  transferIndex: number;
  blockNumber: number;
  blockHash: string;
  amount: string;
  asset: DepositAsset;
}

export interface WatcherState {
  /** The highest accepted block number: everything up to it has been read. */
  cursor: number;
  /** The accepted blocks, ascending and contiguous, the last one at `cursor`. */
  window: BlockRef[];
  /** Transfers seen in the window and not yet signalled. */
  pending: ChainTransfer[];
  /** Transfers signalled whose block is still within the window, kept to notice a deep reorg and never to signal twice. */
  signalled: ChainTransfer[];
}

export interface WatcherParams {
  chain: string;
  /** Blocks a transfer's block needs, counting itself, before it is signalled (≥ 1). */
  confirmations: number;
  /** How many recent blocks are kept for reorg detection (more than `confirmations`). */
  windowSize: number;
}

export interface RoundOutcome {
  state: WatcherState;
  signals: DepositSignal[];
  /** True when a block did not extend the window: ask the chain for the window's canonical hashes and rewind. */
  needsRewind: boolean;
}

export interface RewindOutcome {
  state: WatcherState;
  reorged: ReorgReport[];
  /** The highest block still canonical; undefined when none of the window is (a reorg deeper than the window). */
  forkPoint?: number;
}

/** The identity of a transfer: an execution deduplicates by the same (txHash, transferIndex, asset). */
export const transferKey = (t: { txHash: string; transferIndex: number; asset?: DepositAsset }) =>
  `${t.txHash.toLowerCase()}:${t.transferIndex}:${t.asset ?? 'native'}`;

/** The state of a watcher that starts at `block` (nothing before it is read). */
export function initialWatcherState(block: BlockRef): WatcherState {
  return { cursor: block.number, window: [{ number: block.number, hash: block.hash }], pending: [], signalled: [] };
}

/**
 * Applies one round: `blocks` (ascending; normally the block at `cursor` again and the ones after
 * it) and the `transfers` found in them. Blocks are accepted while they extend the window; the
 * first that does not stops the round with `needsRewind`. Then transfers of newly accepted blocks
 * join `pending`, and pending transfers deep enough are signalled.
 */
export function applyRound(
  state: WatcherState,
  blocks: readonly BlockHeader[],
  transfers: readonly ChainTransfer[],
  params: WatcherParams,
): RoundOutcome {
  const window = [...state.window];
  const accepted = new Map<number, string>();
  let needsRewind = false;
  for (const block of blocks) {
    const tail = window[window.length - 1];
    if (tail !== undefined && block.number <= tail.number) {
      // A block we hold already: it must be the same one.
      const held = window.find((b) => b.number === block.number);
      if (held !== undefined && held.hash !== block.hash) {
        needsRewind = true;
        break;
      }
      continue;
    }
    if (tail !== undefined && (block.number !== tail.number + 1 || block.parentHash !== tail.hash)) {
      needsRewind = true;
      break;
    }
    window.push({ number: block.number, hash: block.hash });
    accepted.set(block.number, block.hash);
  }
  const cursor = window.length > 0 ? window[window.length - 1].number : state.cursor;
  const known = new Set([...state.pending, ...state.signalled].map(transferKey));
  const pending = [...state.pending];
  for (const t of transfers) {
    if (accepted.get(t.blockNumber) !== t.blockHash) continue;
    const key = transferKey(t);
    if (known.has(key)) continue;
    known.add(key);
    pending.push({ ...t, to: t.to.toLowerCase() });
  }
  const depth = (t: ChainTransfer) => cursor - t.blockNumber + 1;
  const ready = pending.filter((t) => depth(t) >= params.confirmations);
  const stillPending = pending.filter((t) => depth(t) < params.confirmations);
  const trimmed = window.slice(Math.max(0, window.length - params.windowSize));
  const oldest = trimmed[0]?.number ?? cursor;
  return {
    state: {
      cursor,
      window: trimmed,
      pending: stillPending,
      signalled: [...state.signalled, ...ready].filter((t) => t.blockNumber >= oldest),
    },
    signals: ready.map((t) => ({
      workflowId: t.workflowId,
      to: t.to,
      ...(t.from === undefined ? {} : { from: t.from }),
      deposit: {
        txHash: t.txHash,
        chain: params.chain,
        amount: t.amount,
        blockNumber: t.blockNumber,
        transferIndex: t.transferIndex,
        asset: t.asset ?? 'native',
      },
    })),
    needsRewind,
  };
}

/**
 * Rewinds to the fork point given the chain's canonical hash of each window number (a number
 * missing from `canonical` is not canonical: the chain is shorter now). Pending transfers above
 * the fork point are dropped; signalled ones are reported once (they stay in `signalled`, marked by
 * the report, so that a re-inclusion of the same transaction is not signalled again). When no
 * window block is canonical, the watcher restarts from the oldest window number − 1 without a
 * parent check for its first block.
 */
export function rewind(state: WatcherState, canonical: ReadonlyMap<number, string>, params: WatcherParams): RewindOutcome {
  let keep = state.window.length;
  while (keep > 0 && canonical.get(state.window[keep - 1].number) !== state.window[keep - 1].hash) keep--;
  const window = state.window.slice(0, keep);
  const forkPoint = keep > 0 ? window[keep - 1].number : undefined;
  const limit = forkPoint ?? (state.window[0]?.number ?? state.cursor + 1) - 1;
  const orphaned = (t: ChainTransfer) => t.blockNumber > limit;
  const reorged = state.signalled
    .filter((t) => orphaned(t) && !t.reorged)
    .map((t) => ({
      workflowId: t.workflowId,
      chain: params.chain,
      txHash: t.txHash,
      transferIndex: t.transferIndex,
      blockNumber: t.blockNumber,
      blockHash: t.blockHash,
      amount: t.amount,
      asset: t.asset ?? 'native',
    }));
  return {
    state: {
      cursor: limit,
      window,
      pending: state.pending.filter((t) => !orphaned(t)),
      // A reorged deposit's key is kept (with no block of the window to match it) until the window
      // moves past its number, so the re-mined transaction is not signalled a second time.
      signalled: state.signalled.map((t) => (orphaned(t) ? { ...t, reorged: true as const } : t)),
    },
    reorged,
    forkPoint,
  };
}

/** The block numbers whose canonical hashes a rewind needs: the window's. */
export function rewindNumbers(state: WatcherState): number[] {
  return state.window.map((b) => b.number);
}

/**
 * The first block the next round reads: the block at `cursor` again (a reorg that kept the height
 * shows as a new hash there), or the one after it when the window is empty.
 */
export function nextRoundFrom(state: WatcherState): number {
  return state.window.length > 0 ? state.cursor : state.cursor + 1;
}
