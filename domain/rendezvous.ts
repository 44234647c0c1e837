import { sha256 } from '@noble/hashes/sha2.js';
import { utf8ToBytes } from '@noble/hashes/utils.js';
import { internal } from './errors';

// Rendezvous (highest-random-weight) hashing: a key belongs to the node whose
// sha256(node + '\n' + key) is highest. Adding a node moves only the keys that the new node wins;
// every process with the same node list computes the same owner.

/** A SHA-256 implementation: @noble/hashes' by default (pure JS, fits the workflow sandbox); the API passes node:crypto's. */
export type Sha256 = (data: Uint8Array) => Uint8Array;

/** The first 8 bytes of sha256(node + '\n' + key): the node's weight for this key. */
function weight(node: string, key: string, hash: Sha256): Uint8Array {
  return hash(utf8ToBytes(`${node}\n${key}`)).subarray(0, 8);
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
export function ownerOf(key: string, nodes: readonly string[], hash: Sha256 = sha256): string {
  if (nodes.length === 0) throw internal('no storage nodes configured');
  let best = nodes[0];
  let bestWeight = weight(best, key, hash);
  for (let i = 1; i < nodes.length; i++) {
    const w = weight(nodes[i], key, hash);
    const c = compare(w, bestWeight);
    if (c > 0 || (c === 0 && nodes[i] < best)) {
      best = nodes[i];
      bestWeight = w;
    }
  }
  return best;
}

/**
 * The `n` nodes that hold `key` (its replicas): the `n` highest weights, highest first, so the
 * first is ownerOf's answer. `n` is capped by the node count. Adding a node changes a key's
 * replicas only where the new node wins a place among them.
 * @throws ServiceError 500 when `nodes` is empty.
 */
export function replicasOf(key: string, nodes: readonly string[], n: number, hash: Sha256 = sha256): string[] {
  if (nodes.length === 0) throw internal('no storage nodes configured');
  const weighted = nodes.map((node) => ({ node, w: weight(node, key, hash) }));
  weighted.sort((a, b) => compare(b.w, a.w) || (a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
  return weighted.slice(0, Math.max(1, Math.min(n, nodes.length))).map((x) => x.node);
}

/** How many of `replicas` copies make a majority: more than half. */
export const majorityOf = (replicas: number): number => Math.floor(replicas / 2) + 1;

/**
 * Items grouped by every node that holds a copy (`replicas[i]` are the nodes of `items[i]`), each
 * with its index in `items`; within a node, items stay in request order. The map holds only nodes
 * with a share, in the order of `nodes`. Undefined when the replicas do not fit: another length,
 * a node not in `nodes`, or one node twice for an item.
 */
export function groupByReplicas<T>(
  items: readonly T[],
  replicas: readonly (readonly string[])[],
  nodes: readonly string[],
): OwnerGroups<T> | undefined {
  if (replicas.length !== items.length) return undefined;
  const known = new Set(nodes);
  const byNode = new Map<string, { index: number; item: T }[]>(nodes.map((node) => [node, []]));
  for (let index = 0; index < items.length; index++) {
    const set = replicas[index];
    if (set.length === 0 || new Set(set).size !== set.length || set.some((node) => !known.has(node))) return undefined;
    for (const node of set) byNode.get(node)!.push({ index, item: items[index] });
  }
  const ordered: OwnerGroups<T> = new Map();
  for (const [node, list] of byNode) if (list.length > 0) ordered.set(node, list);
  return ordered;
}

/** Items grouped by owning node, each with its index in the original list. */
export type OwnerGroups<T> = Map<string, { index: number; item: T }[]>;

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
  hash: Sha256 = sha256,
): OwnerGroups<T> {
  const groups = groupByGivenOwners(
    items,
    items.map((item) => ownerOf(keyOf(item), nodes, hash)),
    nodes,
  );
  // Owners computed from `nodes` always fit.
  if (!groups) throw internal('rendezvous grouping lost an item');
  return groups;
}

/**
 * The same grouping from owners computed elsewhere (`owners[i]` owns `items[i]`), or undefined
 * when they do not fit: another length, or an owner that is not one of `nodes`.
 */
export function groupByGivenOwners<T>(
  items: readonly T[],
  owners: readonly string[],
  nodes: readonly string[],
): OwnerGroups<T> | undefined {
  if (owners.length !== items.length) return undefined;
  const byNode = new Map<string, { index: number; item: T }[]>();
  for (let index = 0; index < items.length; index++) {
    const list = byNode.get(owners[index]);
    if (list) list.push({ index, item: items[index] });
    else byNode.set(owners[index], [{ index, item: items[index] }]);
  }
  const ordered: OwnerGroups<T> = new Map();
  for (const node of nodes) {
    const list = byNode.get(node);
    if (list && !ordered.has(node)) ordered.set(node, list);
  }
  const placed = [...ordered.values()].reduce((n, list) => n + list.length, 0);
  return placed === items.length ? ordered : undefined;
}
