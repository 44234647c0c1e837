import { parseEoa } from '../domain/eoa';
import { badRequest } from '../domain/errors';
import {
  MAX_PAGE_LIMIT,
  checkApplyRequest,
  checkAuditQuery,
  checkListQuery,
  checkMembershipQuery,
  checkRepairRequest,
  type ApplyRequest,
  type RepairRequest,
  type AuditQuery,
  type Checked,
  type WhitelistKind,
} from '../contracts/storage-node-protocol';

// Unknown fields are rejected rather than ignored (the schemas say additionalProperties: false):
// a misspelt field in a client is a bug we want to see at once, not a silently dropped change.
export function valueOr400<T>(checked: Checked<T>, what: string): T {
  if (!checked.ok) throw badRequest(`${what}: ${checked.problem}`);
  return checked.value;
}

/**
 * Checks a parsed `POST /v1/whitelists/apply` body and returns it typed, with the known fields
 * only (a null optional field is dropped). Every entry must be an EOA in its EIP-55 spelling, as
 * the API sends it: the node does not take the API's word for it. Throws a 400 `ServiceError`
 * naming the first problem.
 */
export function parseApplyRequest(value: unknown): ApplyRequest {
  const { batchId, position, changes, tokenId, revert, indexes } = valueOr400(checkApplyRequest(value), 'apply request');
  changes.forEach(({ entry }, i) => {
    const eoa = parseEoa(entry);
    if (!eoa.ok || eoa.address !== entry) throw badRequest(`apply request: changes.${i}.entry is not an EOA in EIP-55 form`);
  });
  if (indexes !== undefined && indexes !== null) {
    if (indexes.length !== changes.length) throw badRequest('apply request: indexes must hold one index per change');
    if (indexes.some((index, i) => i > 0 && index <= indexes[i - 1])) throw badRequest('apply request: indexes must ascend');
  }
  return {
    batchId,
    position,
    changes: changes.map(({ op_type, kind, entry }) => ({ op_type, kind, entry })),
    ...(typeof tokenId === 'string' ? { tokenId } : {}),
    ...(revert === true ? { revert } : {}),
    ...(Array.isArray(indexes) ? { indexes } : {}),
  };
}

/** Checks a parsed `POST /v1/whitelists/repair` body: every entry an EOA in EIP-55 form, none twice. */
export function parseRepairRequest(value: unknown): RepairRequest {
  const { entries, refilled } = valueOr400(checkRepairRequest(value), 'repair request');
  const seen = new Set<string>();
  entries.forEach(({ kind, entry }, i) => {
    const eoa = parseEoa(entry);
    if (!eoa.ok || eoa.address !== entry) throw badRequest(`repair request: entries.${i}.entry is not an EOA in EIP-55 form`);
    if (seen.has(`${kind}:${entry}`)) throw badRequest(`repair request: entries.${i} repeats an entry`);
    seen.add(`${kind}:${entry}`);
  });
  return { entries, ...(typeof refilled === 'number' ? { refilled } : {}) };
}

/** `GET /v1/whitelists/{kind}/{entry}?history`: whether the answer carries the entry's history. */
export function parseMembershipQuery(params: URLSearchParams): { history: boolean } {
  return { history: valueOr400(checkMembershipQuery(queryObject(params)), 'query').history === '1' };
}

/** URL query parameters as one object of strings; a repeated parameter is a 400. */
function queryObject(params: URLSearchParams): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of params) {
    if (key in out) throw badRequest(`query parameter ${key} is repeated`);
    out[key] = value;
  }
  return out;
}

function pageLimit(raw: string | undefined): number {
  if (raw === undefined) return MAX_PAGE_LIMIT;
  const limit = Number(raw);
  if (limit < 1 || limit > MAX_PAGE_LIMIT) throw badRequest(`limit must be an integer of 1..${MAX_PAGE_LIMIT}`);
  return limit;
}

/** `GET /v1/whitelists/{kind}?after&limit`. */
export function parseListQuery(params: URLSearchParams): { after?: string; limit: number; histories: boolean } {
  const query = valueOr400(checkListQuery(queryObject(params)), 'query');
  return {
    ...(query.after === undefined ? {} : { after: query.after }),
    limit: pageLimit(query.limit),
    histories: query.histories === '1',
  };
}

/** What `GET /v1/whitelists/audit` selects. */
export interface AuditSelection {
  kind?: WhitelistKind;
  entry?: string;
  tokenId?: string;
  since?: string;
  before?: { seq: number; index: number };
  /** Newest first in the order of changes, from before this change (exclusive) when set. */
  byChange?: { before?: { position: number; revert: number; index: number; batchId: string } };
  limit: number;
}

/** `GET /v1/whitelists/audit?kind&entry&tokenId&since&before&limit`. */
export function parseAuditQuery(params: URLSearchParams): AuditSelection {
  const query: AuditQuery = valueOr400(checkAuditQuery(queryObject(params)), 'query');
  if (query.since !== undefined && Number.isNaN(Date.parse(query.since))) throw badRequest('since is not a valid time');
  const { before, limit, order, beforeChange, ...filters } = query;
  const [seq, index] = before?.split(':').map(Number) ?? [];
  if (beforeChange !== undefined && order !== 'change') throw badRequest('beforeChange needs order=change');
  let byChange: AuditSelection['byChange'];
  if (order === 'change') {
    const match = beforeChange === undefined ? undefined : /^([0-9]+):([01]):([0-9]+):(.+)$/s.exec(beforeChange);
    byChange = match
      ? { before: { position: Number(match[1]), revert: Number(match[2]), index: Number(match[3]), batchId: match[4] } }
      : {};
  }
  return {
    ...filters,
    ...(before === undefined ? {} : { before: { seq, index } }),
    ...(byChange === undefined ? {} : { byChange }),
    limit: pageLimit(limit),
  };
}
