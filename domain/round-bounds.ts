import type { BlockHeader, ChainTransfer } from './chain-watcher';

/** How big one round's answer may grow: entries (a batch counts one) and bytes of their JSON. */
export interface RoundBounds {
  transfers: number;
  bytes: number;
}

/** What a round answers so far: whole blocks, in order. */
export interface RoundPart {
  headers: BlockHeader[];
  transfers: ChainTransfer[];
  serviceTransfers: ChainTransfer[];
  /** Bytes of the JSON of `transfers` and `serviceTransfers`. */
  bytes: number;
}

export const emptyRoundPart = (): RoundPart => ({ headers: [], transfers: [], serviceTransfers: [], bytes: 0 });

/**
 * Adds blocks to `into`, in order, each with all of its transfers, while the answer stays within
 * `bounds`; the first block that would pass them ends it (answered false) unless it is the
 * answer's first, which is always taken: a block's own entries are bounded where they are made
 * (domain/dust-batches.ts), and a round that took nothing would never move. The blocks left out
 * are the next round's.
 */
export function addWholeBlocks(into: RoundPart, part: { headers: readonly BlockHeader[] } & BlockTransfers, bounds: RoundBounds): boolean {
  for (const h of part.headers) if (!addBlock(into, h, part, bounds)) return false;
  return true;
}

/** Transfers found in some blocks, the service's own apart. */
export interface BlockTransfers {
  transfers: readonly ChainTransfer[];
  serviceTransfers: readonly ChainTransfer[];
}

/**
 * Adds block `h`'s transfers of `part` to `into`, and `h` itself unless `withHeader` is false (a
 * block traced late: the window holds it already), when they stay within `bounds` or `into` holds
 * no block yet (addWholeBlocks says why); false, and nothing added, otherwise.
 */
export function addBlock(into: RoundPart, h: BlockHeader, part: BlockTransfers, bounds: RoundBounds, withHeader = true): boolean {
  const of = (t: ChainTransfer) => t.blockNumber === h.number && t.blockHash === h.hash;
  const transfers = part.transfers.filter(of);
  const service = part.serviceTransfers.filter(of);
  const bytes = jsonBytes(transfers) + jsonBytes(service);
  const over = into.transfers.length + transfers.length > bounds.transfers || into.bytes + bytes > bounds.bytes;
  if (over && into.headers.length > 0) return false;
  if (withHeader) into.headers.push(h);
  into.transfers.push(...transfers);
  into.serviceTransfers.push(...service);
  into.bytes += bytes;
  return true;
}

/** Bytes of the JSON Temporal's converter makes of `value` (UTF-8). */
export const jsonBytes = (value: unknown): number => new TextEncoder().encode(JSON.stringify(value)).length;
