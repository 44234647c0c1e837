import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import canonicalize from 'canonicalize';
import { badRequest } from './errors';

// `canonicalize` is the RFC 8785 reference implementation by one of the RFC's authors. It is pinned
// to 2.1.0: 3.x and later are ESM-only with an import-only export map, which `require` cannot load.
// @noble/hashes rather than node:crypto so that frontends can use this module in a browser as is.

/**
 * The RFC 8785 (JCS) canonical JSON text of `x`.
 * @throws ServiceError 400 when `x` has no JSON form or holds NaN or Infinity.
 */
export function canonicalJson(x: unknown): string {
  let text: string | undefined;
  try {
    text = canonicalize(x);
  } catch (err) {
    throw badRequest(`value has no canonical JSON form: ${(err as Error).message}`);
  }
  if (text === undefined) throw badRequest('value has no JSON representation');
  return text;
}

/**
 * The intent hash (docs/api-executions.md "What is signed, and where it is checked"): lowercase hex SHA-256 (64 digits, no 0x) of the
 * UTF-8 bytes of `canonicalJson(intent)`.
 */
export function intentHash(intent: unknown): string {
  return bytesToHex(sha256(utf8ToBytes(canonicalJson(intent))));
}
