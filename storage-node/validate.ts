import { badRequest } from '../domain/errors';
import {
  FAULT_MODES,
  MAX_BATCH_ID_LENGTH,
  MAX_ENTRY_LENGTH,
  OP_TYPES,
  WHITELIST_KINDS,
  type ApplyRequest,
  type FaultMode,
  type FaultSettings,
  type WhitelistChange,
} from './protocol';

/** Longest delay the fault API accepts, so a typo cannot park requests for hours. */
export const MAX_DELAY_MS = 10 * 60 * 1000;

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

// Unknown fields are rejected rather than ignored: a misspelt field in a client is a bug we
// want to see at once, not a silently dropped change.
function rejectUnknownKeys(value: Record<string, unknown>, allowed: readonly string[], where: string): void {
  const unknown = Object.keys(value).filter((key) => !allowed.includes(key));
  if (unknown.length > 0) throw badRequest(`${where} has unknown field(s): ${unknown.join(', ')}`);
}

function parseChange(value: unknown, index: number): WhitelistChange {
  const where = `changes[${index}]`;
  if (!isPlainObject(value)) throw badRequest(`${where} must be an object`);
  rejectUnknownKeys(value, ['op_type', 'kind', 'entry'], where);
  const { op_type: opType, kind, entry } = value;
  if (!(OP_TYPES as readonly unknown[]).includes(opType)) {
    throw badRequest(`${where}.op_type must be one of ${OP_TYPES.join(', ')}`);
  }
  if (!(WHITELIST_KINDS as readonly unknown[]).includes(kind)) {
    throw badRequest(`${where}.kind must be one of ${WHITELIST_KINDS.join(', ')}`);
  }
  if (typeof entry !== 'string' || entry.length === 0 || entry.length > MAX_ENTRY_LENGTH) {
    throw badRequest(`${where}.entry must be a string of 1..${MAX_ENTRY_LENGTH} characters`);
  }
  return { op_type: opType as WhitelistChange['op_type'], kind: kind as WhitelistChange['kind'], entry };
}

/**
 * Checks a parsed `POST /v1/whitelists/apply` body and returns it typed, keeping only the known
 * fields. Throws a 400 `ServiceError` naming the first problem.
 */
export function parseApplyRequest(value: unknown): ApplyRequest {
  if (!isPlainObject(value)) throw badRequest('body must be a JSON object');
  rejectUnknownKeys(value, ['batchId', 'changes'], 'body');
  const { batchId, changes } = value;
  if (typeof batchId !== 'string' || batchId.length === 0 || batchId.length > MAX_BATCH_ID_LENGTH) {
    throw badRequest(`batchId must be a string of 1..${MAX_BATCH_ID_LENGTH} characters`);
  }
  if (!Array.isArray(changes)) throw badRequest('changes must be an array');
  return { batchId, changes: changes.map(parseChange) };
}

/**
 * Checks a `POST /v1/faults` body and merges it over the current settings.
 * Throws a 400 `ServiceError` on a wrong shape.
 */
export function parseFaultUpdate(value: unknown, current: FaultSettings): FaultSettings {
  if (!isPlainObject(value)) throw badRequest('body must be a JSON object');
  rejectUnknownKeys(value, ['delayMs', 'fault'], 'body');
  const { delayMs = current.delayMs, fault = current.fault } = value;
  if (typeof delayMs !== 'number' || !Number.isInteger(delayMs) || delayMs < 0 || delayMs > MAX_DELAY_MS) {
    throw badRequest(`delayMs must be an integer of 0..${MAX_DELAY_MS}`);
  }
  if (!(FAULT_MODES as readonly unknown[]).includes(fault)) {
    throw badRequest(`fault must be one of ${FAULT_MODES.join(', ')}`);
  }
  return { delayMs, fault: fault as FaultMode };
}
