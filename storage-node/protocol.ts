/**
 * The storage node's wire messages, shared by the node and its clients (the storage-node
 * activities), so both sides name the same routes and shapes.
 */

export const WHITELIST_KINDS = ['developer', 'user'] as const;
export type WhitelistKind = (typeof WHITELIST_KINDS)[number];

export const OP_TYPES = ['add_entry', 'remove_entry'] as const;
export type OpType = (typeof OP_TYPES)[number];

export const FAULT_MODES = ['none', 'garbage', 'http500', 'truncated', 'wrong-shape'] as const;
/** Injected failure of the apply route; `none` outside fault tests. */
export type FaultMode = (typeof FAULT_MODES)[number];

export const ROUTES = {
  apply: '/v1/whitelists/apply',
  listPrefix: '/v1/whitelists/',
  faults: '/v1/faults',
  health: '/healthz',
} as const;

export const MAX_BATCH_ID_LENGTH = 200;
export const MAX_ENTRY_LENGTH = 256;
/** Request bodies above this many bytes are answered 413. */
export const MAX_BODY_BYTES = 1024 * 1024;

export interface WhitelistChange {
  op_type: OpType;
  kind: WhitelistKind;
  entry: string;
}

/** `POST /v1/whitelists/apply` body. */
export interface ApplyRequest {
  batchId: string;
  changes: WhitelistChange[];
}

export interface ChangeResult extends WhitelistChange {
  /** True when the op changed the set: an add of an absent entry, a remove of a present one. */
  changed: boolean;
}

/** `POST /v1/whitelists/apply` 200 answer; the same for every repeat of a batchId. */
export interface ApplyResponse {
  batchId: string;
  results: ChangeResult[];
}

/** `GET /v1/whitelists/{kind}` 200 answer. */
export interface ListResponse {
  kind: WhitelistKind;
  entries: string[];
}

/** `POST /v1/faults` body and answer (only with `--enable-fault-api`). */
export interface FaultSettings {
  delayMs: number;
  fault: FaultMode;
}

/** The one line `main.ts` prints on stdout once listening; launchers parse the port from it. */
export const LISTENING_LINE = /^storage-node listening on (http:\/\/\S+:(\d+))$/;

export const isWhitelistKind = (value: unknown): value is WhitelistKind =>
  (WHITELIST_KINDS as readonly unknown[]).includes(value);
