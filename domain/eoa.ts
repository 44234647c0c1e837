import { keccak_256 } from '@noble/hashes/sha3.js';
import { utf8ToBytes } from '@noble/hashes/utils.js';
import { badRequest } from './errors';

// EOA addresses and their EIP-55 mixed-case checksum (https://eips.ethereum.org/EIPS/eip-55).

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/** The result of parseEoa: the EIP-55 spelling, or why the text is not an address. */
export type EoaParse = { ok: true; address: string } | { ok: false; reason: string };

/**
 * The EIP-55 spelling of `0x` + 40 hex digits in any case: hex digit i is upper-cased when
 * nibble i of keccak_256(lowercase hex digits as ASCII) is 8 or more. Does not check the input's
 * own casing (parseEoa does).
 * @throws ServiceError 400 when `s` is not `0x` + 40 hex digits.
 */
export function toChecksumAddress(s: string): string {
  if (typeof s !== 'string' || !ADDRESS.test(s)) throw badRequest('address must be 0x followed by 40 hex digits');
  const lower = s.slice(2).toLowerCase();
  const hash = keccak_256(utf8ToBytes(lower));
  let out = '0x';
  for (let i = 0; i < 40; i++) {
    // Nibble i of the hash: the high half of byte i/2 for even i, the low half for odd i.
    const nibble = i % 2 === 0 ? hash[i >> 1] >> 4 : hash[i >> 1] & 0x0f;
    out += nibble >= 8 ? lower[i].toUpperCase() : lower[i];
  }
  return out;
}

/**
 * Reads an EOA: `0x` + 40 hex digits. All-lowercase or all-uppercase digits carry no checksum
 * and are accepted; mixed case must match its EIP-55 checksum. Returns the EIP-55 spelling.
 */
export function parseEoa(s: unknown): EoaParse {
  if (typeof s !== 'string' || !ADDRESS.test(s)) {
    return { ok: false, reason: 'must be 0x followed by 40 hex digits' };
  }
  const address = toChecksumAddress(s);
  const digits = s.slice(2);
  const mixed = digits !== digits.toLowerCase() && digits !== digits.toUpperCase();
  if (mixed && digits !== address.slice(2)) {
    return { ok: false, reason: 'mixed-case address fails its EIP-55 checksum' };
  }
  return { ok: true, address };
}
