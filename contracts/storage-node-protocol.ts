/**
 * The storage node's wire contract, in one place: routes, limits, TypeScript types and the ajv
 * schemas that check them. The node, its clients (the batch activities, the API's reads) and the
 * tests all import this module, so a field added here is added everywhere at once.
 * Each schema is a `JSONSchemaType<T>`: the compiler rejects a schema that does not describe `T`.
 */
import { Ajv, type JSONSchemaType, type ValidateFunction } from 'ajv';

import { OP_TYPES, WHITELIST_KINDS, isWhitelistKind, type OpType, type WhitelistKind } from '../domain/whitelist-messages';
import type { EntryHistory } from '../domain/entry-order';

export { OP_TYPES, WHITELIST_KINDS, isWhitelistKind, type OpType, type WhitelistKind };

export const ROUTES = {
  apply: '/v1/whitelists/apply',
  /** `POST`: entries' histories from other replicas, merged into this node's (anti-entropy, read repair). */
  repair: '/v1/whitelists/repair',
  audit: '/v1/whitelists/audit',
  /** `GET {listPrefix}{kind}` lists a whitelist; `GET {listPrefix}{kind}/{entry}` checks one entry. */
  listPrefix: '/v1/whitelists/',
  health: '/healthz',
} as const;

export const MAX_BATCH_ID_LENGTH = 200;
export const MAX_ENTRY_LENGTH = 256;
/** Token ids as the token store allows them (tokens/token-store.ts), with room to spare. */
export const MAX_TOKEN_ID_LENGTH = 128;
/** Request bodies above this many bytes are answered 413. */
export const MAX_BODY_BYTES = 1024 * 1024;
/** Largest page of entries or audit records one read returns; also the default `limit`. */
export const MAX_PAGE_LIMIT = 1000;

import type { ChangeResult, WhitelistChange } from '../domain/whitelist-messages';

export type { ChangeResult, WhitelistChange, EntryHistory };

/**
 * `POST /v1/whitelists/apply` body: one node's share of a batch, or its revert. Every change
 * stands in one order (domain/entry-order.ts): `position`, then `batchId`, then its index
 * in `changes`; a node applies it only if nothing newer has decided its entry.
 */
export interface ApplyRequest {
  batchId: string;
  /** The batch's place in the order of accepted batches: its workflow's start, ms since the epoch. */
  position: number;
  /** Entries in EIP-55 form. */
  changes: WhitelistChange[];
  /** The API token id that authorised the batch (never the token): kept in the audit trail. */
  tokenId?: string;
  /** Undo these changes of the batch (it failed with 500); the same changes, in the same order. */
  revert?: boolean;
  /**
   * Each change's index in its batch (the order's last key), one per change, ascending: every
   * replica of an entry then orders a change alike, whatever share of the batch it holds. Absent:
   * the index in `changes`.
   */
  indexes?: number[];
}

/** One entry's history as a replica holds it (domain/entry-order.ts), for a repair. */
export interface RepairEntry {
  kind: WhitelistKind;
  /** EIP-55 form. */
  entry: string;
  history: EntryHistory;
}

/**
 * A node's data as a repair sees it: `incarnation` names its data folder (new whenever the node
 * starts on an empty one), and `refilled` says whether a full repair pass has filled that
 * incarnation from the other replicas. A node that came back empty is not `refilled`: reads do
 * not count it toward a majority until a pass has given it back what it lost.
 */
export interface ReplicaState {
  incarnation: number;
  refilled: boolean;
}

/** `POST /v1/whitelists/repair` body: histories merged into the node's own, durably, before the answer. */
export interface RepairRequest {
  entries: RepairEntry[];
  /** A full pass heard every node and filled this incarnation: the node marks it refilled (if it is still its own). */
  refilled?: number;
}

/** `POST /v1/whitelists/repair` 200 answer: how many entries the merge changed. */
export interface RepairResponse {
  repaired: number;
}

/** `POST /v1/whitelists/apply` 200 answer; the same for every repeat of a batchId. */
export interface ApplyResponse {
  batchId: string;
  results: ChangeResult[];
}

/**
 * `GET /v1/whitelists/{kind}?after=A&limit=N` 200 answer: at most N entries that sort after A
 * (compareEntries), in that order. `next` is set when more follow: send it as `after`.
 */
export interface ListResponse {
  kind: WhitelistKind;
  entries: string[];
  next?: string;
  /**
   * With `histories=1`: every entry the node has a history for (removed ones too, their tombstones)
   * in `entries`, and its history here, one per entry.
   */
  histories?: EntryHistory[];
  /** With `histories=1`. */
  replica?: ReplicaState;
}

/** `GET /v1/whitelists/{kind}/{entry}` 200 answer. */
export interface MembershipResponse {
  kind: WhitelistKind;
  entry: string;
  listed: boolean;
  /** With `history=1`: the entry's history on this node (empty when it has none). */
  history?: EntryHistory;
  /** With `history=1`. */
  replica?: ReplicaState;
}

/**
 * One applied change as the node's audit trail keeps it. `seq` (the batch's log sequence number)
 * and `index` (the change's place in its batch) order the node's records and make its cursor.
 */
export interface AuditRecord {
  seq: number;
  index: number;
  /** The batch the change belongs to; for a revert, the batch it undoes. */
  batchId: string;
  /** The batch's position in the order of accepted batches. */
  position: number;
  /** True for the change that undid a change of `batchId` after its 500 answer. */
  revert: boolean;
  op_type: OpType;
  kind: WhitelistKind;
  entry: string;
  changed: boolean;
  superseded: boolean;
  /** The token id the signed request carried. */
  tokenId?: string;
  /** The node's clock when it made the change durable (ISO-8601). */
  appliedAt: string;
}

/**
 * `GET /v1/whitelists/audit?kind&entry&tokenId&since&before&limit` 200 answer: records newest
 * first (seq, index descending). `next` is set when more follow: send it as `before`.
 */
export interface AuditResponse {
  records: AuditRecord[];
  next?: string;
}

/**
 * The message of the log line (pino's JSON, on stdout) `main.ts` writes once listening, whatever
 * LOG_LEVEL says; launchers take the node's URL from it.
 */
export const LISTENING_MSG = /^storage-node listening on (https?:\/\/\S+:(\d+))$/;

/** The URL a node's log line says it listens on; undefined for any other line. */
export function listeningUrl(line: string): string | undefined {
  try {
    const { msg } = JSON.parse(line) as { msg?: unknown };
    return typeof msg === 'string' ? LISTENING_MSG.exec(msg)?.[1] : undefined;
  } catch {
    return undefined;
  }
}

/**
 * An audit cursor in the order of changes (`order=change`): `{position}:{revert 0|1}:{index}:{batchId}`
 * of the last record a page returned. Every replica of a change has the same one.
 */
export const AUDIT_CHANGE_CURSOR_PATTERN = '^[0-9]{1,16}:[01]:[0-9]{1,7}:.{1,200}$';

/** The key of an audit record in the order of changes: alike on every replica that applied the change. */
export const auditChangeKey = (r: Pick<AuditRecord, 'position' | 'revert' | 'index' | 'batchId'>) =>
  `${r.position}:${r.revert ? 1 : 0}:${r.index}:${r.batchId}`;

/** An audit cursor: `{seq}:{index}` of the last record a page returned. */
export const AUDIT_CURSOR_PATTERN = '^[0-9]{1,15}:[0-9]{1,6}$';
/** An ISO-8601 UTC time as `Date.prototype.toISOString` writes it. */
export const ISO_TIME_PATTERN = '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?Z$';

/**
 * The order of every entry list, on the node and in the API's merge: case-insensitively (so EIP-55
 * addresses sort by their value), then by the exact text for entries that differ only in case.
 */
export function compareEntries(a: string, b: string): number {
  const la = a.toLowerCase();
  const lb = b.toLowerCase();
  if (la !== lb) return la < lb ? -1 : 1;
  return a === b ? 0 : a < b ? -1 : 1;
}

// ---- schemas ----

const kindSchema = { type: 'string', enum: [...WHITELIST_KINDS] } as const;
const opTypeSchema = { type: 'string', enum: [...OP_TYPES] } as const;
const entrySchema = { type: 'string', minLength: 1, maxLength: MAX_ENTRY_LENGTH } as const;
/** An EOA's shape; its EIP-55 checksum is checked beside the schema (storage-node/validate.ts). */
const eoaSchema = { type: 'string', pattern: '^0x[0-9a-fA-F]{40}$' } as const;
const positionSchema = { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER } as const;
const batchIdSchema = { type: 'string', minLength: 1, maxLength: MAX_BATCH_ID_LENGTH } as const;
const tokenIdSchema = { type: 'string', minLength: 1, maxLength: MAX_TOKEN_ID_LENGTH } as const;

const orderFields = {
  position: positionSchema,
  batchId: batchIdSchema,
  index: { type: 'integer', minimum: 0, maximum: 1_000_000 },
} as const;

export const entryHistorySchema: JSONSchemaType<EntryHistory> = {
  type: 'object',
  additionalProperties: false,
  required: ['base', 'changes'],
  properties: {
    base: {
      type: 'object',
      additionalProperties: false,
      required: ['present'],
      properties: {
        present: { type: 'boolean' },
        order: {
          type: 'object',
          additionalProperties: false,
          required: ['position', 'batchId', 'index'],
          properties: orderFields,
          nullable: true,
        },
      },
    },
    changes: {
      type: 'array',
      maxItems: 1000,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['position', 'batchId', 'index', 'op', 'reverted', 'changed', 'superseded'],
        properties: {
          ...orderFields,
          op: opTypeSchema,
          reverted: { type: 'boolean' },
          changed: { type: 'boolean' },
          superseded: { type: 'boolean' },
        },
      },
    },
  },
};

const changeSchema: JSONSchemaType<WhitelistChange> = {
  type: 'object',
  additionalProperties: false,
  required: ['op_type', 'kind', 'entry'],
  properties: { op_type: opTypeSchema, kind: kindSchema, entry: eoaSchema },
};

export const applyRequestSchema: JSONSchemaType<ApplyRequest> = {
  type: 'object',
  additionalProperties: false,
  required: ['batchId', 'position', 'changes'],
  properties: {
    batchId: batchIdSchema,
    position: positionSchema,
    changes: { type: 'array', items: changeSchema },
    tokenId: { ...tokenIdSchema, nullable: true },
    revert: { type: 'boolean', nullable: true },
    indexes: { type: 'array', items: { type: 'integer', minimum: 0, maximum: 1_000_000 }, nullable: true },
  },
};

const replicaStateSchema: JSONSchemaType<ReplicaState> = {
  type: 'object',
  required: ['incarnation', 'refilled'],
  properties: { incarnation: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER }, refilled: { type: 'boolean' } },
};

export const repairRequestSchema: JSONSchemaType<RepairRequest> = {
  type: 'object',
  additionalProperties: false,
  required: ['entries'],
  properties: {
    refilled: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER, nullable: true },
    entries: {
      type: 'array',
      maxItems: MAX_PAGE_LIMIT,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['kind', 'entry', 'history'],
        properties: { kind: kindSchema, entry: eoaSchema, history: entryHistorySchema },
      },
    },
  },
};

export const repairResponseSchema: JSONSchemaType<RepairResponse> = {
  type: 'object',
  required: ['repaired'],
  properties: { repaired: { type: 'integer', minimum: 0 } },
};

export const applyResponseSchema: JSONSchemaType<ApplyResponse> = {
  type: 'object',
  required: ['batchId', 'results'],
  properties: {
    batchId: { type: 'string' },
    results: {
      type: 'array',
      items: {
        type: 'object',
        required: ['op_type', 'kind', 'entry', 'changed', 'superseded'],
        properties: {
          op_type: opTypeSchema,
          kind: kindSchema,
          entry: { type: 'string' },
          changed: { type: 'boolean' },
          superseded: { type: 'boolean' },
        },
      },
    },
  },
};

export const listResponseSchema: JSONSchemaType<ListResponse> = {
  type: 'object',
  required: ['kind', 'entries'],
  properties: {
    kind: kindSchema,
    entries: { type: 'array', items: { type: 'string' } },
    next: { type: 'string', nullable: true },
    histories: { type: 'array', items: entryHistorySchema, nullable: true },
    replica: { ...replicaStateSchema, nullable: true },
  },
};

export const membershipResponseSchema: JSONSchemaType<MembershipResponse> = {
  type: 'object',
  required: ['kind', 'entry', 'listed'],
  properties: {
    kind: kindSchema,
    entry: { type: 'string' },
    listed: { type: 'boolean' },
    history: { ...entryHistorySchema, nullable: true },
    replica: { ...replicaStateSchema, nullable: true },
  },
};

export const auditRecordSchema: JSONSchemaType<AuditRecord> = {
  type: 'object',
  required: ['seq', 'index', 'batchId', 'position', 'revert', 'op_type', 'kind', 'entry', 'changed', 'superseded', 'appliedAt'],
  properties: {
    seq: { type: 'integer', minimum: 1 },
    index: { type: 'integer', minimum: 0 },
    batchId: { type: 'string' },
    position: positionSchema,
    revert: { type: 'boolean' },
    op_type: opTypeSchema,
    kind: kindSchema,
    entry: { type: 'string' },
    changed: { type: 'boolean' },
    superseded: { type: 'boolean' },
    tokenId: { type: 'string', nullable: true },
    appliedAt: { type: 'string', pattern: ISO_TIME_PATTERN },
  },
};

export const auditResponseSchema: JSONSchemaType<AuditResponse> = {
  type: 'object',
  required: ['records'],
  properties: {
    records: { type: 'array', items: auditRecordSchema },
    next: { type: 'string', pattern: AUDIT_CURSOR_PATTERN, nullable: true },
  },
};

/** The query of `GET /v1/whitelists/{kind}`, as strings (what a URL carries). */
export interface ListQuery {
  after?: string;
  limit?: string;
  /** `1`: every entry with its history, removed ones included. */
  histories?: '1';
}

/** The query of `GET /v1/whitelists/{kind}/{entry}`. */
export interface MembershipQuery {
  /** `1`: the answer carries the entry's history. */
  history?: '1';
}

export const membershipQuerySchema: JSONSchemaType<MembershipQuery> = {
  type: 'object',
  additionalProperties: false,
  required: [],
  properties: { history: { type: 'string', enum: ['1'], nullable: true } },
};

export const listQuerySchema: JSONSchemaType<ListQuery> = {
  type: 'object',
  additionalProperties: false,
  required: [],
  properties: {
    after: { ...entrySchema, nullable: true },
    limit: { type: 'string', pattern: '^[0-9]{1,4}$', nullable: true },
    histories: { type: 'string', enum: ['1'], nullable: true },
  },
};

/** The query of `GET /v1/whitelists/audit`, as strings. */
export interface AuditQuery {
  kind?: WhitelistKind;
  entry?: string;
  tokenId?: string;
  /** Only records applied at or after this time (ISO-8601). */
  since?: string;
  /** Only records older than this cursor (a previous page's `next`). */
  before?: string;
  /** `change`: newest first in the order of changes (position, batchId, revert, index) instead of the node's own. */
  order?: 'change';
  /** With `order=change`: only records before this change cursor (AUDIT_CHANGE_CURSOR_PATTERN). */
  beforeChange?: string;
  limit?: string;
}

export const auditQuerySchema: JSONSchemaType<AuditQuery> = {
  type: 'object',
  additionalProperties: false,
  required: [],
  properties: {
    kind: { ...kindSchema, nullable: true },
    entry: { ...entrySchema, nullable: true },
    tokenId: { ...tokenIdSchema, nullable: true },
    since: { type: 'string', pattern: ISO_TIME_PATTERN, nullable: true },
    before: { type: 'string', pattern: AUDIT_CURSOR_PATTERN, nullable: true },
    order: { type: 'string', enum: ['change'], nullable: true },
    beforeChange: { type: 'string', pattern: AUDIT_CHANGE_CURSOR_PATTERN, nullable: true },
    limit: { type: 'string', pattern: '^[0-9]{1,4}$', nullable: true },
  },
};

// ---- checking ----

const ajv = new Ajv({ strict: true, allErrors: false });

/** The first problem of a value a schema refused, as "where: what" (e.g. `changes.0.kind: must be equal to one of ...`). */
function describe(validate: ValidateFunction): string {
  const error = validate.errors?.[0];
  if (!error) return 'invalid';
  const where = error.instancePath ? error.instancePath.slice(1).replace(/\//g, '.') : 'body';
  if (error.keyword === 'additionalProperties') return `${where} has an unknown field ${JSON.stringify(error.params.additionalProperty)}`;
  if (error.keyword === 'required') return `${where} is missing ${JSON.stringify(error.params.missingProperty)}`;
  if (error.keyword === 'enum') return `${where} must be one of ${(error.params.allowedValues as string[]).join(', ')}`;
  return `${where} ${error.message ?? 'is invalid'}`;
}

export type Checked<T> = { ok: true; value: T } | { ok: false; problem: string };

/** A checker for one message type: it answers, it never throws, so each side maps a refusal its own way. */
export function checker<T>(schema: JSONSchemaType<T>): (value: unknown) => Checked<T> {
  const validate = ajv.compile(schema);
  return (value) => (validate(value) ? { ok: true, value } : { ok: false, problem: describe(validate) });
}

export const checkApplyRequest = checker(applyRequestSchema);
export const checkApplyResponse = checker(applyResponseSchema);
export const checkListResponse = checker(listResponseSchema);
export const checkMembershipResponse = checker(membershipResponseSchema);
export const checkAuditResponse = checker(auditResponseSchema);
export const checkListQuery = checker(listQuerySchema);
export const checkMembershipQuery = checker(membershipQuerySchema);
export const checkRepairRequest = checker(repairRequestSchema);
export const checkRepairResponse = checker(repairResponseSchema);
export const checkAuditQuery = checker(auditQuerySchema);
