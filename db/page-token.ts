import { EXECUTION_ID_PATTERN } from '../contracts/ids';

/** Where a page of a wallet's executions ended: the last row's sort key (newest first). */
export interface PagePosition {
  createdAt: string;
  executionId: string;
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const EXECUTION_ID = new RegExp(EXECUTION_ID_PATTERN);
const REFUND_ID = /^[0-9a-f]{32}$/;

/** An opaque page token of a list sorted by (createdAt, key), newest first: base64url of `[createdAt, key]`. */
function encode(createdAt: string, key: string): string {
  return Buffer.from(JSON.stringify([createdAt, key])).toString('base64url');
}

/** The `[createdAt, key]` a token names, or undefined when it is not one of ours (the route answers 400). */
function decode(token: string, keyPattern: RegExp): [string, string] | undefined {
  if (token.length > 400 || !/^[A-Za-z0-9_-]+$/.test(token)) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (!Array.isArray(value) || value.length !== 2) return undefined;
  const [createdAt, key] = value;
  if (typeof createdAt !== 'string' || !ISO.test(createdAt) || Number.isNaN(Date.parse(createdAt))) return undefined;
  if (typeof key !== 'string' || !keyPattern.test(key)) return undefined;
  return [createdAt, key];
}

/** A page token of a wallet's executions. */
export const encodePageToken = (position: PagePosition): string => encode(position.createdAt, position.executionId);

export function decodePageToken(token: string): PagePosition | undefined {
  const found = decode(token, EXECUTION_ID);
  return found && { createdAt: found[0], executionId: found[1] };
}

/** Where a page of the refunds ledger ended: the last row's sort key (newest first). */
export interface LedgerPosition {
  createdAt: string;
  id: string;
}

/** A page token of the refunds ledger. */
export const encodeLedgerPageToken = (position: LedgerPosition): string => encode(position.createdAt, position.id);

export function decodeLedgerPageToken(token: string): LedgerPosition | undefined {
  const found = decode(token, REFUND_ID);
  return found && { createdAt: found[0], id: found[1] };
}
