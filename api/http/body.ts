import type { Context } from 'koa';
import getRawBody from 'raw-body';
import { ServiceError, badRequest } from '../../domain/errors';

/**
 * Reads and parses the JSON request body, bounded by `limitBytes`. Over the limit: 413 (the
 * connection is not read further). Missing, not JSON, invalid UTF-8, not `application/json` or
 * compressed (a Content-Encoding other than identity, which this reader does not decode): 400.
 */
export async function readJsonBody(ctx: Context, limitBytes: number): Promise<unknown> {
  // Media types are case-insensitive and may have whitespace before ';' (RFC 9110 §8.3.1).
  const type = ctx.request.type.trim().toLowerCase();
  if (type && type !== 'application/json') throw badRequest('Content-Type must be application/json');
  const encoding = ctx.get('content-encoding').trim().toLowerCase();
  if (encoding && encoding !== 'identity') throw badRequest('Content-Encoding is not supported; send the JSON body uncompressed');
  const length = ctx.request.length;
  if (length !== undefined && length > limitBytes) throw new ServiceError(413, 'BODY_TOO_LARGE', `body is larger than ${limitBytes} bytes`);
  let raw: Buffer;
  try {
    raw = await getRawBody(ctx.req, { limit: limitBytes, length });
  } catch (err: any) {
    if (err?.type === 'entity.too.large') throw new ServiceError(413, 'BODY_TOO_LARGE', `body is larger than ${limitBytes} bytes`);
    throw badRequest('request body could not be read');
  }
  if (raw.length === 0) throw badRequest('request body is empty');
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(raw);
  } catch {
    throw badRequest('request body is not valid UTF-8');
  }
  try {
    return JSON.parse(text);
  } catch {
    throw badRequest('request body is not valid JSON');
  }
}
