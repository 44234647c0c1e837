import { ServiceError, unavailable } from '../../domain/errors';
import { covers, isPresent, mergeAll, type EntryHistory } from '../../domain/entry-order';
import { nodeName } from '../../domain/node-names';
import { majorityOf, replicasOf } from '../../domain/rendezvous';
import { ownerKeyOfChecksummed, type WhitelistKind } from '../../domain/whitelist-messages';
import { AUDIT_CHANGE_CURSOR_PATTERN, MAX_PAGE_LIMIT, type AuditRecord, type ReplicaState } from '../../contracts/storage-node-protocol';
import { ReplicaUnavailable, heardMajority, replicaPage, repairsOf, type ReplicaClient } from '../../activities/replica-repair';
import { decodePageToken, encodePageToken } from '../http/page-token';
import { NODE_DOWN_RETRY_AFTER_S, type StorageNodeReads } from './node-reads';
import { mergeAuditByChange, type MergedAuditRecord } from './merge';
import { nodeSha256 } from './service';

const EOA = /^0x[0-9a-fA-F]{40}$/;
const CHANGE_CURSOR = new RegExp(AUDIT_CHANGE_CURSOR_PATTERN, 's');

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
  before: string;
}
const isAuditToken = (v: unknown): v is AuditToken =>
  typeof v === 'object' &&
  v !== null &&
  Object.keys(v).length === 1 &&
  typeof (v as AuditToken).before === 'string' &&
  CHANGE_CURSOR.test((v as AuditToken).before);

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
 * Rounds of node reads one page of entries may take when removed entries (tombstones) fill the
 * nodes' pages; each round reads four times as many entries as the last, up to the nodes' page
 * limit, so a page comes back short only past hundreds of removed entries in a row (7, 28, 112, 448
 * for a page of 7), and then still with its nextPageToken.
 */
const ENTRY_ROUNDS_PER_PAGE = 4;
const ROUND_GROWTH = 4;

/**
 * The whitelist reads, from a majority of each entry's replicas (decision 0093): membership and
 * entries merge the replicas' histories of each entry and answer the newest change in the one
 * order; a replica found behind is repaired before the answer (blocking read repair), so that a
 * majority holds what was answered and no later read goes back. The audit trail shows each change
 * once, however many replicas applied it.
 */
export class WhitelistReads {
  private readonly replicaCount: number;

  constructor(
    private readonly nodes: readonly string[],
    private readonly reads: StorageNodeReads,
    private readonly replicas: ReplicaClient,
    replicaCount: number,
  ) {
    this.replicaCount = Math.max(1, Math.min(replicaCount, nodes.length));
  }

  private name = (node: string) => nodeName(this.nodes, node);

  /** 503 naming `nodes`: they did not answer and too few others did. */
  private down(nodes: readonly string[], cause?: unknown): ServiceError {
    return unavailable(
      `storage node(s) ${nodes.map(this.name).join(', ')} did not answer (or are being refilled after an empty start), so a majority of some entry's copies is not at hand; try again later`,
      NODE_DOWN_RETRY_AFTER_S,
      cause,
    );
  }

  /**
   * Writes `merged` to every answering replica that lacks part of it, then checks that a majority
   * of each entry's replicas hold it: what this read answers, every later majority read sees.
   */
  private async readRepair(kind: WhitelistKind, views: Parameters<typeof repairsOf>[1]): Promise<void> {
    const failed = new Set<string>();
    await Promise.all(
      [...repairsOf(kind, views)].map(async ([node, entries]) => {
        try {
          await this.replicas.repair(node, entries);
        } catch (err) {
          if (!(err instanceof ReplicaUnavailable) || (err.status !== undefined && err.status < 500)) throw err;
          failed.add(node);
        }
      }),
    );
    if (failed.size === 0) return;
    for (const view of views) {
      const holding = [...view.answered.keys()].filter((node) => !failed.has(node) || covers(view.answered.get(node)!, view.merged));
      if (holding.length < majorityOf(view.replicas.length)) throw this.down([...failed]);
    }
  }

  /** One page of the `kind` whitelist, sorted (case-insensitively), EIP-55 as stored. */
  async entries(kind: WhitelistKind, pageSize: number, pageToken?: string): Promise<Page<string>> {
    let after = pageToken === undefined ? undefined : decodePageToken(pageToken, isEntriesToken).after;
    const result: string[] = [];
    for (let round = 0; round < ENTRY_ROUNDS_PER_PAGE; round++) {
      const wanted = Math.min(MAX_PAGE_LIMIT, (pageSize - result.length) * ROUND_GROWTH ** round);
      const page = await replicaPage(
        this.replicas,
        { nodes: this.nodes, replicas: this.replicaCount, hash: nodeSha256 },
        kind,
        after,
        wanted,
      );
      // A node down may be the only one to hold an entry of this page: answer only when every
      // entry's replica set can still have a majority answering.
      if (page.unreachable.length > this.replicaCount - majorityOf(this.replicaCount)) throw this.down(page.unreachable);
      const short = page.views.find((view) => !heardMajority(view));
      if (short) throw this.down(short.replicas.filter((node) => !short.counted.has(node)));
      await this.readRepair(kind, page.views);
      const present = page.views.filter((view) => view.present).map((view) => view.entry);
      const room = pageSize - result.length;
      result.push(...present.slice(0, room));
      if (present.length > room) {
        after = present[room - 1];
        break;
      }
      after = page.next;
      if (after === undefined || result.length >= pageSize) break;
    }
    return { result, ...(after === undefined ? {} : { nextPageToken: encodePageToken({ after }) }) };
  }

  /**
   * Whether the EIP-55 `entry` is listed: every node is asked for its history of the entry (a node
   * that is not a replica may hold a copy from before STORAGE_NODES changed, until a repair hands it
   * over); the answer waits for a majority of the entry's replicas and for every other node to
   * answer or fail, merges what came, and repairs the replicas among them that are behind.
   */
  async membership(kind: WhitelistKind, entry: string): Promise<{ kind: WhitelistKind; entry: string; listed: boolean }> {
    const replicas = replicasOf(ownerKeyOfChecksummed({ kind, entry }), this.nodes, this.replicaCount, nodeSha256);
    const others = this.nodes.filter((node) => !replicas.includes(node));
    const [heard, copies] = await Promise.all([
      this.firstMajority(replicas, (node) => this.replicas.entryHistory(node, kind, entry)),
      Promise.allSettled(others.map((node) => this.replicas.entryHistory(node, kind, entry))),
    ]);
    const elsewhere = copies.flatMap((c) => (c.status === 'fulfilled' ? [c.value.history] : []));
    const answered = new Map([...heard].map(([node, { history }]) => [node, history]));
    const counted = new Set([...heard].filter(([, { replica }]) => replica.refilled).map(([node]) => node));
    // No replica refilled is a new deployment only if no other node is either: a node that holds
    // what was acknowledged may be down among the replicas while the others are empty (one lost
    // its disk, one was just added).
    if (counted.size === 0 && copies.some((c) => c.status === 'fulfilled' && c.value.replica.refilled)) throw this.down(replicas);
    const merged = mergeAll([...answered.values(), ...elsewhere]);
    await this.readRepair(kind, [{ entry, replicas, answered, counted, merged, present: isPresent(merged) }]);
    return { kind, entry, listed: isPresent(merged) };
  }

  /**
   * The answers of `replicas` until a majority of them that are refilled answered (a node back
   * with an empty disk answers, and is repaired, but does not count); 503 when that cannot happen.
   * A majority none of which is refilled (a new deployment) is taken only once every replica has
   * answered or failed, so that one refilled replica's answer is never passed over.
   */
  private firstMajority(
    replicas: readonly string[],
    ask: (node: string) => Promise<{ history: EntryHistory; replica: ReplicaState }>,
  ): Promise<Map<string, { history: EntryHistory; replica: ReplicaState }>> {
    const needed = majorityOf(replicas.length);
    return new Promise((resolve, reject) => {
      const answered = new Map<string, { history: EntryHistory; replica: ReplicaState }>();
      const failed: Array<{ node: string; err?: unknown }> = [];
      let counted = 0;
      let done = false;
      const pending = () => replicas.length - answered.size - failed.filter((f) => f.err !== undefined).length;
      const check = () => {
        if (done) return;
        // None refilled among the replicas, and a majority answered: a new deployment, nothing acknowledged before.
        if (counted >= needed || (counted === 0 && pending() === 0 && answered.size >= needed)) {
          done = true;
          resolve(answered);
        } else if (counted + pending() < needed && !(counted === 0 && answered.size + pending() >= needed)) {
          done = true;
          const ours = failed.find(
            (f) => f.err !== undefined && (!(f.err instanceof ReplicaUnavailable) || (f.err.status !== undefined && f.err.status < 500)),
          );
          reject(
            ours
              ? ours.err
              : this.down(
                  failed.map((f) => f.node),
                  failed.find((f) => f.err !== undefined)?.err,
                ),
          );
        }
      };
      for (const node of replicas) {
        ask(node).then(
          (answer) => {
            answered.set(node, answer);
            // Heard, but an empty disk that has not been refilled cannot vouch for what it lost.
            if (answer.replica.refilled) counted++;
            else failed.push({ node });
            check();
          },
          (err: unknown) => {
            failed.push({ node, err });
            check();
          },
        );
      }
    });
  }

  /**
   * One page of the audit trail, newest first in the order of changes (position, batch, revert,
   * index), each change once: every node is asked, and records of one change on several replicas
   * are one record (the first replica to apply it names the node and the time).
   */
  async audit(filters: AuditFilters, pageSize: number, pageToken?: string): Promise<Page<MergedAuditRecord>> {
    const before = pageToken === undefined ? undefined : decodePageToken(pageToken, isAuditToken).before;
    const settled = await Promise.allSettled(
      this.nodes.map((node) =>
        this.reads.audit(node, { ...filters, order: 'change', ...(before === undefined ? {} : { beforeChange: before }), limit: pageSize }),
      ),
    );
    const unreachable = this.nodes.filter((_, i) => settled[i].status === 'rejected');
    const ours = settled.find((s) => s.status === 'rejected' && !(s.reason instanceof ServiceError && s.reason.status === 503));
    if (ours) throw (ours as PromiseRejectedResult).reason;
    if (unreachable.length > this.replicaCount - majorityOf(this.replicaCount))
      throw this.down(unreachable, (settled.find((s) => s.status === 'rejected') as PromiseRejectedResult).reason);
    const pages = this.nodes.flatMap((node, i) => {
      const s = settled[i];
      return s.status === 'fulfilled'
        ? [{ node: this.name(node), records: s.value.records as AuditRecord[], full: s.value.records.length >= pageSize }]
        : [];
    });
    const page = mergeAuditByChange(pages, pageSize);
    return { result: page.records, ...(page.before === undefined ? {} : { nextPageToken: encodePageToken({ before: page.before }) }) };
  }
}
