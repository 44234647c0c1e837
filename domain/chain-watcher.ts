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
  /**
   * A dust batch: this many transfers the address can never take (below its minAmount, or of
   * another asset) in one block, summed into one entry (`txHash` is then the block's hash,
   * `transferIndex` 0). Absent: one transfer.
   */
  transfers?: number;
  /**
   * With `transfers`: a surplus batch, transfers that could each have been the deposit, past the
   * first few of the block to one address (domain/dust-batches.ts): owed back, never a deposit.
   */
  surplus?: true;
  /** Set on a signalled transfer once its block was reorganised away (reported once). */
  reorged?: true;
}

/** What the watcher sends an execution: the `depositCompleted` signal's payload and its target. */
export interface DepositSignal {
  workflowId: string;
  /** The deposit address it paid (lowercase): the dust cap counts per address. */
  to: string;
  /** A dust batch (ChainTransfer.transfers): never signalled to the execution, owed back as one row. */
  transfers?: number;
  /** A surplus batch (ChainTransfer.surplus). */
  surplus?: true;
  /** The hash of the transfer's block (the read model keeps it, to notice a reorganisation while no watcher runs). */
  blockHash: string;
  /** Who paid it (ChainTransfer's `from`): a refund's sender. Not sent to the execution; unset from an older build's state. */
  from?: string;
  deposit: { txHash: string; chain: string; amount: string; blockNumber: number; transferIndex: number; asset: DepositAsset };
}

/** A signalled deposit whose block is no longer canonical. */
export interface ReorgReport {
  workflowId: string;
  /** The deposit address it paid (lowercase). */
  to: string;
  /** A dust batch's count (ChainTransfer.transfers). */
  transfers?: number;
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
  /**
   * Blocks of the window read without their call traces (the node did not answer in a round's
   * budget), oldest first: traced again by later rounds. Absent in an older build's state: none.
   */
  untraced?: BlockRef[];
}

/** What a round's call traces did: blocks read without them, and blocks of the backlog traced now. */
export interface RoundTraces {
  untraced?: readonly BlockRef[];
  traced?: readonly BlockRef[];
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
  /**
   * Signalled transfers whose block number the round accepted with another hash: reorganised away
   * (a watcher resumed below them holds them without their blocks in its window).
   */
  reorged: ReorgReport[];
  /** True when a block did not extend the window: ask the chain for the window's canonical hashes and rewind. */
  needsRewind: boolean;
  /**
   * Blocks of the backlog that left the window untraced: the watcher no longer traces them, and an
   * internal-call deposit in them is named by `npm run reconcile` instead.
   */
  abandoned: BlockRef[];
}

export interface RewindOutcome {
  state: WatcherState;
  reorged: ReorgReport[];
  /** The highest block still canonical; undefined when none of the window is (a reorg deeper than the window). */
  forkPoint?: number;
}

/**
 * The identity of a transfer: an execution deduplicates by the same (txHash, transferIndex, asset);
 * the recipient tells apart the dust batches of one block (they share the block's hash).
 */
export const transferKey = (t: { txHash: string; transferIndex: number; asset?: DepositAsset; to: string }) =>
  `${t.txHash.toLowerCase()}:${t.transferIndex}:${t.asset ?? 'native'}:${t.to.toLowerCase()}`;

/** The state of a watcher that starts at `block` (nothing before it is read). */
export function initialWatcherState(block: BlockRef): WatcherState {
  return { cursor: block.number, window: [{ number: block.number, hash: block.hash }], pending: [], signalled: [] };
}

/**
 * Applies one round: `blocks` (ascending; normally the block at `cursor` again and the ones after
 * it) and the `transfers` found in them. Blocks are accepted while they extend the window; the
 * first that does not stops the round with `needsRewind`. Then transfers of blocks the window
 * holds (newly accepted, or traced late: `traces.traced`) join `pending` unless known, and
 * pending transfers deep enough are signalled. Accepted blocks read without their traces
 * (`traces.untraced`) join the backlog; backlog blocks that leave the window are `abandoned`.
 */
export function applyRound(
  state: WatcherState,
  blocks: readonly BlockHeader[],
  transfers: readonly ChainTransfer[],
  params: WatcherParams,
  traces: RoundTraces = {},
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
  // A transfer reported reorganised away that a new block holds again was mined again: it waits
  // for its confirmations once more and is signalled again (its execution and its ledger row are
  // told it is back); every other known transfer is seen once.
  const known = new Set([...state.pending, ...state.signalled.filter((t) => !t.reorged)].map(transferKey));
  const seenNow = new Set<string>();
  const pending = [...state.pending];
  const held = new Map(window.map((b) => [b.number, b.hash]));
  for (const t of transfers) {
    if (held.get(t.blockNumber) !== t.blockHash) continue;
    const key = transferKey(t);
    if (known.has(key)) continue;
    known.add(key);
    seenNow.add(key);
    pending.push({ ...t, to: t.to.toLowerCase() });
  }
  // A signalled transfer whose block number now has another accepted hash is gone with its block.
  const orphaned = (t: ChainTransfer) => !t.reorged && accepted.has(t.blockNumber) && accepted.get(t.blockNumber) !== t.blockHash;
  const reorged = state.signalled.filter(orphaned).map((t) => reorgReport(t, params.chain));
  const signalledBefore = state.signalled
    .filter((t) => !(t.reorged && seenNow.has(transferKey(t))))
    .map((t) => (orphaned(t) ? { ...t, reorged: true as const } : t));
  const depth = (t: ChainTransfer) => cursor - t.blockNumber + 1;
  const ready = pending.filter((t) => depth(t) >= params.confirmations);
  const stillPending = pending.filter((t) => depth(t) < params.confirmations);
  const trimmed = window.slice(Math.max(0, window.length - params.windowSize));
  const oldest = trimmed[0]?.number ?? cursor;
  const kept = new Map(trimmed.map((b) => [b.number, b.hash]));
  const tracedNow = new Set((traces.traced ?? []).map((b) => b.hash));
  const backlog = [
    ...(state.untraced ?? []).filter((b) => !tracedNow.has(b.hash)),
    ...(traces.untraced ?? []).filter((b) => accepted.get(b.number) === b.hash),
  ];
  const untraced = backlog.filter((b) => kept.get(b.number) === b.hash);
  return {
    state: {
      cursor,
      window: trimmed,
      pending: stillPending,
      signalled: [...signalledBefore, ...ready].filter((t) => t.blockNumber >= oldest),
      ...(untraced.length > 0 ? { untraced } : {}),
    },
    signals: ready.map((t) => ({
      workflowId: t.workflowId,
      to: t.to,
      blockHash: t.blockHash,
      ...(t.transfers === undefined ? {} : { transfers: t.transfers }),
      ...(t.surplus === undefined ? {} : { surplus: t.surplus }),
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
    reorged,
    needsRewind,
    // Blocks that left the window below it; those of another hash were reorganised away (a rewind reads their numbers again).
    abandoned: backlog.filter((b) => b.number < oldest && held.get(b.number) === b.hash),
  };
}

/** The report of a signalled transfer whose block is no longer canonical. */
function reorgReport(t: ChainTransfer, chain: string): ReorgReport {
  return {
    workflowId: t.workflowId,
    to: t.to,
    ...(t.transfers === undefined ? {} : { transfers: t.transfers }),
    chain,
    txHash: t.txHash,
    transferIndex: t.transferIndex,
    blockNumber: t.blockNumber,
    blockHash: t.blockHash,
    amount: t.amount,
    asset: t.asset ?? 'native',
  };
}

/**
 * Transfers the watcher's state may hold (pending and signalled within the window) before its
 * rounds answer one block each: the state is carried through continue-as-new and must stay far
 * below Temporal's payload limit (2 MiB), however many rounds of a flood the window holds.
 */
export const MAX_HELD_TRANSFERS = 2_000;

/**
 * How many transfers the next round may answer: what the state has room for. At 0 a round still
 * answers its first block (a watcher that took nothing would never move), and room comes back as
 * blocks leave the window.
 */
export const roundRoom = (state: WatcherState): number => Math.max(0, MAX_HELD_TRANSFERS - state.pending.length - state.signalled.length);

/**
 * The watcher's last confirmed block: the highest block of the window at least `confirmations`
 * deep and below every block of the backlog, so that every transfer at or below it was signalled
 * (or owed). Kept outside the workflow's history, it is where a watcher started afresh resumes
 * (and traces again what the backlog held); undefined while no window block is that deep.
 */
export function confirmedCheckpoint(state: WatcherState, confirmations: number): BlockRef | undefined {
  const deepest = Math.min(state.cursor - confirmations + 1, ...(state.untraced ?? []).map((b) => b.number - 1));
  for (let i = state.window.length - 1; i >= 0; i--) if (state.window[i].number <= deepest) return state.window[i];
  return undefined;
}

/**
 * The state a new watcher run resumes from (after the last one failed or was terminated), built
 * from what the read model keeps outside the workflow's history: the last confirmed block
 * (`checkpoint`) and the transfers signalled (`signalled`: not reported reorganised away since),
 * judged against the chain's canonical hashes of their blocks and of the window before
 * `checkpoint` (`canonical`). A signalled transfer whose block is no longer canonical is reported
 * now, as a rewind would have (one whose block a later round accepts with another hash is
 * reported by applyRound). Transfers after the resume point are read again: the executions and
 * the ledger take each one once, and one mined again after a reorganisation is signalled again.
 */
export function resumeState(
  checkpoint: BlockRef,
  signalled: readonly ChainTransfer[],
  canonical: ReadonlyMap<number, string>,
  params: WatcherParams,
): { state: WatcherState; reorged: ReorgReport[] } {
  const orphaned = signalled.filter((t) => canonical.get(t.blockNumber) !== t.blockHash);
  // A canonical checkpoint vouches for every block below it (each names its parent): the run
  // resumes there and reads every later block again. One a reorganisation replaced says nothing of
  // the blocks below it: the run resumes a window's length lower.
  const start =
    canonical.get(checkpoint.number) === checkpoint.hash ? checkpoint.number : Math.max(0, checkpoint.number - params.windowSize);
  const window: BlockRef[] = [];
  for (let n = Math.max(0, start - params.windowSize + 1); n <= start; n++) {
    const hash = canonical.get(n);
    if (hash === undefined) window.length = 0;
    else window.push({ number: n, hash });
  }
  const reorged = orphaned.map((t) => reorgReport(t, params.chain));
  const oldest = window[0]?.number ?? start;
  return {
    state: {
      cursor: start,
      window,
      pending: [],
      signalled: [
        ...signalled.filter((t) => !orphaned.includes(t) && t.blockNumber >= oldest),
        ...orphaned.map((t) => ({ ...t, reorged: true as const })),
      ],
    },
    reorged,
  };
}

/** The transfer a signal was made of (as the read model keeps it). */
export function signalledTransfer(s: DepositSignal): ChainTransfer {
  return {
    blockNumber: s.deposit.blockNumber,
    blockHash: s.blockHash,
    txHash: s.deposit.txHash,
    transferIndex: s.deposit.transferIndex,
    asset: s.deposit.asset,
    to: s.to,
    amount: s.deposit.amount,
    workflowId: s.workflowId,
    ...(s.transfers === undefined ? {} : { transfers: s.transfers }),
    ...(s.surplus === undefined ? {} : { surplus: s.surplus }),
  };
}

/** How many windows below its checkpoint the read model keeps a watcher's signals, and resumeState reads back. */
export const KEPT_WINDOWS = 2;

/** The block numbers whose canonical hashes resumeState needs. */
export function resumeNumbers(checkpoint: BlockRef, signalled: readonly ChainTransfer[], params: WatcherParams): number[] {
  const low = Math.max(0, checkpoint.number - KEPT_WINDOWS * params.windowSize);
  const high = Math.max(checkpoint.number, ...signalled.map((t) => t.blockNumber));
  return Array.from({ length: high - low + 1 }, (_, i) => low + i);
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
  const reorged = state.signalled.filter((t) => orphaned(t) && !t.reorged).map((t) => reorgReport(t, params.chain));
  return {
    state: {
      cursor: limit,
      window,
      pending: state.pending.filter((t) => !orphaned(t)),
      // A reorged deposit's key is kept (with no block of the window to match it) until the window
      // moves past its number, so the re-mined transaction is not signalled a second time.
      signalled: state.signalled.map((t) => (orphaned(t) ? { ...t, reorged: true as const } : t)),
      // Blocks above the fork point are read again, with their traces.
      ...(state.untraced?.some((b) => b.number <= limit) ? { untraced: state.untraced.filter((b) => b.number <= limit) } : {}),
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
