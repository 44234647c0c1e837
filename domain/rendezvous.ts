import { sha256 } from '@noble/hashes/sha2.js';
import { utf8ToBytes } from '@noble/hashes/utils.js';
import { internal } from './errors';

// Rendezvous (highest-random-weight) hashing: a key belongs to the node whose
// sha256(node + '\n' + key) is highest. Adding a node moves only the keys that the new node wins;
// every process with the same node list computes the same owner.

/** The first 8 bytes of sha256(node + '\n' + key): the node's weight for this key. */
function weight(node: string, key: string): Uint8Array {
  return sha256(utf8ToBytes(`${node}\n${key}`)).subarray(0, 8);
}

/** Bytewise (big-endian) comparison of two equal-length weights. */
function compare(a: Uint8Array, b: Uint8Array): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return 0;
}

/**
 * The node that owns `key` among `nodes`: the highest weight, ties (practically never) going to
 * the lexicographically smaller node so that the answer does not depend on the list's order.
 * @throws ServiceError 500 when `nodes` is empty.
 */
export function ownerOf(key: string, nodes: readonly string[]): string {
  if (nodes.length === 0) throw internal('no storage nodes configured');
  let best = nodes[0];
  let bestWeight = weight(best, key);
  for (let i = 1; i < nodes.length; i++) {
    const w = weight(nodes[i], key);
    const c = compare(w, bestWeight);
    if (c > 0 || (c === 0 && nodes[i] < best)) {
      best = nodes[i];
      bestWeight = w;
    }
  }
  return best;
}

/**
 * Splits `items` by owning node. Each entry keeps the item's index in `items` (the request
 * order, for assembling answers); within a node, items stay in request order. The map holds only
 * nodes that own something, in the order of `nodes`.
 * @throws ServiceError 500 when `nodes` is empty and `items` is not.
 */
export function groupByOwner<T>(
  items: readonly T[],
  keyOf: (item: T) => string,
  nodes: readonly string[],
): Map<string, { index: number; item: T }[]> {
  const byNode = new Map<string, { index: number; item: T }[]>();
  items.forEach((item, index) => {
    const owner = ownerOf(keyOf(item), nodes);
    const list = byNode.get(owner);
    if (list) list.push({ index, item });
    else byNode.set(owner, [{ index, item }]);
  });
  const ordered = new Map<string, { index: number; item: T }[]>();
  for (const node of nodes) {
    const list = byNode.get(node);
    if (list && !ordered.has(node)) ordered.set(node, list);
  }
  return ordered;
}
