import { EXECUTION_ID_PATTERN } from '../contracts/ids';

/** Where a page of a wallet's executions ended: the last row's sort key (newest first). */
export interface PagePosition {
  createdAt: string;
  executionId: string;
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const ID = new RegExp(EXECUTION_ID_PATTERN);

/** An opaque page token: base64url of `[createdAt, executionId]`. */
export function encodePageToken(position: PagePosition): string {
  return Buffer.from(JSON.stringify([position.createdAt, position.executionId])).toString('base64url');
}

/** The position a token names, or undefined when it is not one of ours (the route answers 400). */
export function decodePageToken(token: string): PagePosition | undefined {
  if (token.length > 400 || !/^[A-Za-z0-9_-]+$/.test(token)) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (!Array.isArray(value) || value.length !== 2) return undefined;
  const [createdAt, executionId] = value;
  if (typeof createdAt !== 'string' || !ISO.test(createdAt) || Number.isNaN(Date.parse(createdAt))) return undefined;
  if (typeof executionId !== 'string' || !ID.test(executionId)) return undefined;
  return { createdAt, executionId };
}
