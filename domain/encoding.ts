import bs58 from 'bs58';
import { badRequest } from './errors';

// publicKey and signature travel as 0x-hex or base58 (docs/api-executions.md "What is signed, and where it
// is checked"). Base58 has no '0', so a leading "0x" decides the reading.

const HEX_BODY = /^(?:[0-9a-fA-F]{2})+$/;

function decodeFixed(s: unknown, length: number, field: string): Uint8Array {
  const problem = `${field} must be ${length} bytes as 0x-hex or base58`;
  // Bound the work before decoding: hex needs 2 + 2n characters and base58 fewer.
  if (typeof s !== 'string' || s.length === 0 || s.length > 2 + 2 * length) throw badRequest(problem);
  let bytes: Uint8Array | undefined;
  if (s.startsWith('0x')) {
    const body = s.slice(2);
    if (HEX_BODY.test(body)) bytes = hexToBytes(body);
  } else {
    bytes = bs58.decodeUnsafe(s); // undefined on a non-base58 character
  }
  if (bytes === undefined || bytes.length !== length) throw badRequest(problem);
  return bytes;
}

function hexToBytes(body: string): Uint8Array {
  const out = new Uint8Array(body.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(body.slice(2 * i, 2 * i + 2), 16);
  return out;
}

/**
 * Decodes an ed25519 public key given as `0x` + 64 hex digits (any case) or base58.
 * @throws ServiceError 400 for anything that does not decode to exactly 32 bytes.
 */
export function decodeKey(s: string): Uint8Array {
  return decodeFixed(s, 32, 'publicKey');
}

/**
 * Decodes an ed25519 signature given as `0x` + 128 hex digits (any case) or base58.
 * @throws ServiceError 400 for anything that does not decode to exactly 64 bytes.
 */
export function decodeSignature(s: string): Uint8Array {
  return decodeFixed(s, 64, 'signature');
}

/** `0x` + lowercase hex: the canonical spelling the service stores and compares. */
export function toHex(bytes: Uint8Array): string {
  let out = '0x';
  for (const b of bytes) out += b.toString(16).padStart(2, '0');
  return out;
}

/** Base58 (Bitcoin alphabet), the usual spelling of a Solana-style wallet key. */
export function toBase58(bytes: Uint8Array): string {
  return bs58.encode(bytes);
}
