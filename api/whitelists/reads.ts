import { ServiceError, unavailable } from '../../domain/errors';
import { nodeName } from '../../domain/node-names';
import { ownerOf } from '../../domain/rendezvous';
import { ownerKeyOfChecksummed, type WhitelistKind } from '../../domain/whitelist-messages';
import { AUDIT_CURSOR_PATTERN } from '../../contracts/storage-node-protocol';
import { decodePageToken, encodePageToken } from '../http/page-token';
import { NODE_DOWN_RETRY_AFTER_S, type StorageNodeReads } from './node-reads';
import { mergeAuditPages, mergeEntryPages, type AuditCursors, type MergedAuditRecord } from './merge';
import { nodeSha256 } from './service';

const EOA = /^0x[0-9a-fA-F]{40}$/;
const CURSOR = new RegExp(AUDIT_CURSOR_PATTERN);

interface EntriesToken {
  after: string;
}
const isEntriesToken = (v: unknown): v is EntriesToken =>
  typeof v === 'object' &&
  v !== null &&
  Object.keys(v).length === 1 &&
  typeof (v as EntriesToken).after === 'string' &&
  EOA.test((v as EntriesToken).after);

interface AuditToken {
  cursors: AuditCursors;
}
const isAuditToken = (v: unknown): v is AuditToken => {
  if (typeof v !== 'object' || v === null || Object.keys(v).length !== 1) return false;
  const cursors = (v as AuditToken).cursors;
  return (
    typeof cursors === 'object' &&
    cursors !== null &&
    !Array.isArray(cursors) &&
    Object.values(cursors).every((c) => c === null || (typeof c === 'string' && CURSOR.test(c)))
  );
};

/** The audit route's filters, already checked (entry in EIP-55 form). */
export interface AuditFilters {
  kind?: WhitelistKind;
  entry?: string;
  tokenId?: string;
  since?: string;
}

export interface Page<T> {
  result: T[];
  nextPageToken?: string;
}

/**
 * Every node's answer, or one 503 naming every node that did not give one: a list or an audit
 * page built without a node would be silently partial.
 */
async function fromEveryNode<T>(nodes: readonly string[], all: readonly string[], ask: (node: string) => Promise<T>): Promise<T[]> {
  const settled = await Promise.allSettled(nodes.map(ask));
  const failures = settled.flatMap((s, i) => (s.status === 'rejected' ? [{ node: nodes[i], reason: s.reason as unknown }] : []));
  if (failures.length === 0) return settled.map((s) => (s as PromiseFulfilledResult<T>).value);
  const ours = failures.find((f) => !(f.reason instanceof ServiceError && f.reason.status === 503));
  if (ours) throw ours.reason;
  const names = failures.map((f) => nodeName(all, f.node)).join(', ');
  throw unavailable(
    `storage node(s) ${names} did not answer, so the answer would be incomplete; try again later`,
    NODE_DOWN_RETRY_AFTER_S,
    failures[0].reason,
  );
}

/** Rounds of node reads one page of entries may take when copies on non-owner nodes are left out. */
const ENTRY_ROUNDS_PER_PAGE = 4;

/**
 * The whitelist reads: entries (merged from every node, each entry from its owner only), membership (the owner node only) and
 * the audit trail (merged from every node, newest first).
 */
export class WhitelistReads {
  constructor(
    private readonly nodes: readonly string[],
    private readonly reads: StorageNodeReads,
  ) {}

  /** One page of the `kind` whitelist, sorted (case-insensitively), EIP-55 as stored. */
  async entries(kind: WhitelistKind, pageSize: number, pageToken?: string): Promise<Page<string>> {
    let after = pageToken === undefined ? undefined : decodePageToken(pageToken, isEntriesToken).after;
    const result: string[] = [];
    // Only the owner's copy counts, as for membership: a copy on another node (left by a change of
    // STORAGE_NODES, a copied data directory, a request replayed before requests were bound to one
    // node) is not listed. Copies left out can make a round short: read on, a few rounds at most,
    // so that a page is full whenever more entries follow.
    for (let round = 0; round < ENTRY_ROUNDS_PER_PAGE; round++) {
      const wanted = pageSize - result.length;
      const pages = await fromEveryNode(this.nodes, this.nodes, async (node) => ({
        node,
        ...(await this.reads.list(node, kind, after, wanted)),
      }));
      const page = mergeEntryPages(pages, wanted, (node, entry) => this.ownerOf(kind, entry) === node);
      result.push(...page.entries);
      after = page.after;
      if (after === undefined || result.length >= pageSize) break;
    }
    return { result, ...(after === undefined ? {} : { nextPageToken: encodePageToken({ after }) }) };
  }

  /** Whether the EIP-55 `entry` is listed: asks only the node that owns it (rendezvous hashing). */
  async membership(kind: WhitelistKind, entry: string): Promise<{ kind: WhitelistKind; entry: string; listed: boolean }> {
    const answer = await this.reads.membership(this.ownerOf(kind, entry), kind, entry);
    return { kind, entry, listed: answer.listed };
  }

  /** The node that owns `entry` (EIP-55) of `kind`: the only one whose copy counts. */
  private ownerOf(kind: WhitelistKind, entry: string): string {
    return ownerOf(ownerKeyOfChecksummed({ kind, entry }), this.nodes, nodeSha256);
  }

  /** One page of the merged audit trail, newest first. */
  async audit(filters: AuditFilters, pageSize: number, pageToken?: string): Promise<Page<MergedAuditRecord>> {
    // The token keys each node's cursor by its name (node-N), never by its address.
    const name = (node: string) => nodeName(this.nodes, node);
    const decoded = pageToken === undefined ? {} : decodePageToken(pageToken, isAuditToken).cursors;
    // Only the configured nodes: a token from before a node was removed must not page on forever.
    const cursors: AuditCursors = Object.fromEntries(
      this.nodes.filter((node) => name(node) in decoded).map((node) => [node, decoded[name(node)]]),
    );
    const open = this.nodes.filter((node) => cursors[node] !== null);
    const pages = await fromEveryNode(open, this.nodes, async (node) => {
      const before = cursors[node] ?? undefined;
      const answer = await this.reads.audit(node, { ...filters, ...(before === undefined ? {} : { before }), limit: pageSize });
      return { node, records: answer.records, ...(answer.next === undefined ? {} : { next: answer.next }) };
    });
    const page = mergeAuditPages(pages, pageSize, cursors);
    const records = page.records.map((record) => ({ ...record, node: name(record.node) }));
    const next = page.cursors && Object.fromEntries(Object.entries(page.cursors).map(([node, cursor]) => [name(node), cursor]));
    return { result: records, ...(next ? { nextPageToken: encodePageToken({ cursors: next }) } : {}) };
  }
}
