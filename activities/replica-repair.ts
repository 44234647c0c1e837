import { covers, isPresent, mergeAll, type EntryHistory } from '../domain/entry-order';
import { majorityOf, replicasOf, type Sha256 } from '../domain/rendezvous';
import { ownerKeyOfChecksummed, type WhitelistKind } from '../domain/whitelist-messages';
import {
  ROUTES,
  checkListResponse,
  checkMembershipResponse,
  checkRepairResponse,
  compareEntries,
  type Checked,
  type ListResponse,
  type RepairEntry,
  type ReplicaState,
} from '../contracts/storage-node-protocol';
import { getJson, postJson, type PostAnswer } from './http-post';
import type { NodeTransport } from './node-transport';

/** A node that did not give a usable answer; `status` is its HTTP status when it answered one. */
export class ReplicaUnavailable extends Error {
  constructor(
    readonly node: string,
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'ReplicaUnavailable';
  }
}

/** The replica reads and writes of repair and read repair, signed like every request to a node. */
export class ReplicaClient {
  constructor(
    private readonly transport: NodeTransport,
    private readonly timeoutMs: number,
  ) {}

  /** One page of every entry `node` has a history for (tombstones included), with the histories and the node's replica state. */
  historyPage(
    node: string,
    kind: WhitelistKind,
    after: string | undefined,
    limit: number,
  ): Promise<Required<Pick<ListResponse, 'entries' | 'histories' | 'replica'>> & ListResponse> {
    const query = new URLSearchParams({ limit: String(limit), histories: '1', ...(after === undefined ? {} : { after }) });
    return this.call(node, 'GET', `${ROUTES.listPrefix}${kind}?${query}`, undefined, checkListResponse).then((page) => {
      const histories = page.histories ?? [];
      if (histories.length !== page.entries.length || page.replica === undefined)
        throw new ReplicaUnavailable(node, `${node}: a history page without one history per entry or its replica state`);
      return { ...page, histories, replica: page.replica };
    });
  }

  /** The history of one entry on `node` (empty when it has none), with the node's replica state. */
  async entryHistory(node: string, kind: WhitelistKind, entry: string): Promise<{ history: EntryHistory; replica: ReplicaState }> {
    const path = `${ROUTES.listPrefix}${kind}/${encodeURIComponent(entry)}?history=1`;
    const answer = await this.call(node, 'GET', path, undefined, checkMembershipResponse);
    if (answer.history === undefined || answer.replica === undefined)
      throw new ReplicaUnavailable(node, `${node}: a membership answer without its history or replica state`);
    return { history: answer.history, replica: answer.replica };
  }

  /** Merges `entries` into `node`'s histories, durably before it answers; `refilled` marks that incarnation refilled. */
  async repair(node: string, entries: readonly RepairEntry[], refilled?: number): Promise<number> {
    if (entries.length === 0 && refilled === undefined) return 0;
    const body = JSON.stringify({ entries, ...(refilled === undefined ? {} : { refilled }) });
    return (await this.call(node, 'POST', ROUTES.repair, body, checkRepairResponse)).repaired;
  }

  private async call<T>(
    node: string,
    method: 'GET' | 'POST',
    path: string,
    body: string | undefined,
    check: (value: unknown) => Checked<T>,
  ): Promise<T> {
    let answer: PostAnswer;
    try {
      const options = { timeoutMs: this.timeoutMs, transport: this.transport };
      answer = method === 'GET' ? await getJson(`${node}${path}`, options) : await postJson(`${node}${path}`, body ?? '', options);
    } catch (err) {
      throw new ReplicaUnavailable(node, `${node} did not answer (${(err as Error).name})`);
    }
    if (answer.status < 200 || answer.status > 299)
      throw new ReplicaUnavailable(node, `${node} answered HTTP ${answer.status}`, answer.status);
    let checked: Checked<T>;
    try {
      checked = check(JSON.parse(answer.text));
    } catch {
      checked = { ok: false, problem: 'not JSON' };
    }
    if (!checked.ok) throw new ReplicaUnavailable(node, `${node} answered off its contract (${checked.problem})`, answer.status);
    return checked.value;
  }
}

/** One entry as a read or a repair sees it: its replicas, what each answered, and their merge. */
export interface ReplicaView {
  entry: string;
  replicas: string[];
  /** The replicas that answered, with their history (empty when they have none). */
  answered: Map<string, EntryHistory>;
  /** Those of them that count toward a majority: refilled since they last started empty. */
  counted: Set<string>;
  merged: EntryHistory;
  present: boolean;
}

/** Where the nodes' history pages, asked after one entry, are all complete up to (the smallest `next`), or undefined. */
function pageBound(pages: ReadonlyArray<{ next?: string }>): string | undefined {
  let bound: string | undefined;
  for (const { next } of pages) if (next !== undefined && (bound === undefined || compareEntries(next, bound) < 0)) bound = next;
  return bound;
}

/**
 * One page of a whitelist as the replicas hold it: every node's history page after `after`, each
 * entry (up to the first node's bound) merged from the replicas that answered. Nodes that did not
 * answer are in `unreachable`; an entry none of whose answering replicas holds a history is not
 * seen at all (it has none where it was asked).
 */
export async function replicaPage(
  client: ReplicaClient,
  placement: { nodes: readonly string[]; replicas: number; hash?: Sha256 },
  kind: WhitelistKind,
  after: string | undefined,
  limit: number,
): Promise<{ views: ReplicaView[]; next?: string; unreachable: string[]; replicas: Record<string, ReplicaState> }> {
  const settled = await Promise.allSettled(placement.nodes.map((node) => client.historyPage(node, kind, after, limit)));
  const unreachable = placement.nodes.filter((_, i) => settled[i].status === 'rejected');
  const pages = placement.nodes.flatMap((node, i) => {
    const s = settled[i];
    return s.status === 'fulfilled' ? [{ node, ...s.value }] : [];
  });
  const bound = pageBound(pages);
  const states: Record<string, ReplicaState> = Object.fromEntries(pages.map((page) => [page.node, page.replica]));
  // No node refilled at all: a new deployment (or every disk lost), where nothing was acknowledged before.
  const anyRefilled = pages.some((page) => page.replica.refilled);
  const within = (entry: string) => bound === undefined || compareEntries(entry, bound) <= 0;
  const held = new Map<string, Map<string, EntryHistory>>();
  for (const page of pages) {
    page.entries.forEach((entry, i) => {
      if (!within(entry)) return;
      const copies = held.get(entry) ?? new Map<string, EntryHistory>();
      copies.set(page.node, page.histories[i]);
      held.set(entry, copies);
    });
  }
  const views = [...held.keys()].sort(compareEntries).map((entry) => {
    const replicas = replicasOf(ownerKeyOfChecksummed({ kind, entry }), placement.nodes, placement.replicas, placement.hash);
    const answered = new Map<string, EntryHistory>();
    const copies = held.get(entry)!;
    for (const node of replicas)
      if (!unreachable.includes(node)) answered.set(node, copies.get(node) ?? { base: { present: false }, changes: [] });
    // Copies on nodes that are not replicas (an old placement) count too: the newest change wins wherever it is.
    const merged = mergeAll([...copies.values()]);
    const counted = new Set([...answered.keys()].filter((node) => states[node].refilled || !anyRefilled));
    return { entry, replicas, answered, counted, merged, present: isPresent(merged) };
  });
  return { views, ...(bound === undefined ? {} : { next: bound }), unreachable, replicas: states };
}

/** The repairs that bring every answering replica of `views` up to the merge, grouped by node. */
export function repairsOf(kind: WhitelistKind, views: readonly ReplicaView[]): Map<string, RepairEntry[]> {
  const byNode = new Map<string, RepairEntry[]>();
  for (const view of views)
    for (const [node, history] of view.answered) {
      if (covers(history, view.merged)) continue;
      const list = byNode.get(node) ?? [];
      list.push({ kind, entry: view.entry, history: view.merged });
      byNode.set(node, list);
    }
  return byNode;
}

/**
 * Whether a majority of the view's replicas answered, counting only refilled ones while any node
 * is (a node back with an empty disk may have lost what it acknowledged): only then is its merge
 * the newest accepted state.
 */
export const heardMajority = (view: Pick<ReplicaView, 'counted' | 'replicas'>) => view.counted.size >= majorityOf(view.replicas.length);
