import { badRequest } from '../../domain/errors';

/**
 * Page tokens: opaque to clients, base64url of a small JSON object that this API alone reads.
 * A token that does not decode to what `accept` expects is a 400 (a client cut or altered it).
 */
export function encodePageToken(value: object): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

export function decodePageToken<T>(token: string, accept: (value: unknown) => value is T): T {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    value = undefined;
  }
  if (!accept(value))
    throw badRequest('pageToken is not a token this API gave out; send the nextPageToken of the previous page, with the same filters');
  return value;
}
