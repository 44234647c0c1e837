import { getJson, type PostAnswer } from '../../activities/http-post';
import type { NodeTransport } from '../../activities/node-transport';
import { internal, unavailable } from '../../domain/errors';
import {
  ROUTES,
  checkAuditResponse,
  checkListResponse,
  checkMembershipResponse,
  type AuditResponse,
  type Checked,
  type ListResponse,
  type MembershipResponse,
  type WhitelistKind,
} from '../../contracts/storage-node-protocol';

/** Seconds a client should wait before asking again when a storage node did not answer. */
export const NODE_DOWN_RETRY_AFTER_S = 5;

/** What the audit route of a node selects (contracts/storage-node-protocol.ts AuditQuery). */
export interface NodeAuditQuery {
  kind?: WhitelistKind;
  entry?: string;
  tokenId?: string;
  since?: string;
  before?: string;
  /** `change`: newest first in the order of changes, alike on every replica. */
  order?: 'change';
  beforeChange?: string;
  limit: number;
}

/**
 * The API's reads from the storage nodes, over their wire contract (contracts/storage-node-protocol.ts).
 * A node that does not answer, answers non-2xx or off-contract is a 503 naming the node (node-N): the
 * caller cannot get a complete answer now and may retry.
 */
export class StorageNodeReads {
  constructor(
    private readonly timeoutMs: number,
    private readonly transport: NodeTransport,
    /** How an answer names a node (never its address: domain/node-names.ts). */
    private readonly name: (node: string) => string,
  ) {}

  /** At most `limit` entries of `kind` after `after`, in compareEntries order. */
  list(node: string, kind: WhitelistKind, after: string | undefined, limit: number): Promise<ListResponse> {
    const query = new URLSearchParams({ limit: String(limit), ...(after === undefined ? {} : { after }) });
    return this.get(node, `${ROUTES.listPrefix}${kind}?${query}`, checkListResponse);
  }

  /** Whether `entry` (exactly this text) is on the node's `kind` whitelist. */
  membership(node: string, kind: WhitelistKind, entry: string): Promise<MembershipResponse> {
    return this.get(node, `${ROUTES.listPrefix}${kind}/${encodeURIComponent(entry)}`, checkMembershipResponse);
  }

  /** One page of the node's audit trail, newest first. */
  audit(node: string, selection: NodeAuditQuery): Promise<AuditResponse> {
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries(selection)) if (value !== undefined) query.set(key, String(value));
    return this.get(node, `${ROUTES.audit}?${query}`, checkAuditResponse);
  }

  private async get<T>(node: string, path: string, check: (value: unknown) => Checked<T>): Promise<T> {
    let answer: PostAnswer;
    try {
      answer = await getJson(`${node}${path}`, { timeoutMs: this.timeoutMs, transport: this.transport });
    } catch (err) {
      throw unavailable(`storage node ${this.name(node)} did not answer; try again later`, NODE_DOWN_RETRY_AFTER_S, err);
    }
    const { status, text } = answer;
    // A 4xx means this API built a request the node refuses (or signed it with a key the node
    // does not hold): our fault, not the node's.
    if (status >= 400 && status < 500) throw internal(`storage node ${node} refused ${path} with HTTP ${status}: ${text.slice(0, 200)}`);
    if (status < 200 || status > 299)
      throw unavailable(`storage node ${this.name(node)} answered HTTP ${status}; try again later`, NODE_DOWN_RETRY_AFTER_S);
    let checked: Checked<T>;
    try {
      checked = check(JSON.parse(text));
    } catch {
      checked = { ok: false, problem: 'not JSON' };
    }
    if (!checked.ok)
      throw unavailable(
        `storage node ${this.name(node)} answered off its contract (${checked.problem}); try again later`,
        NODE_DOWN_RETRY_AFTER_S,
      );
    return checked.value;
  }
}
