import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { toHex } from '../../domain/encoding';

// Server-side ed25519 verification (decision 0001): Node's OpenSSL verify, about 90x
// faster than tweetnacl here, guarded by two checks of our own so that the rule does not depend
// on a library's leniency: S must be canonical (S < L) and the key must not be of small order.

/** The group order L = 2^252 + 27742317777372353535851937790883648493. */
const L = (1n << 252n) + 27742317777372353535851937790883648493n;

/** DER prefix of an ed25519 SubjectPublicKeyInfo (RFC 8410); the raw 32-byte key follows. */
const SPKI_PREFIX = Uint8Array.from([0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00]);

/**
 * The y-coordinates (little-endian; the top bit, x's sign, is compared masked off) of the points
 * of order 1, 2, 4 and 8, and the non-canonical spellings y = p, p + 1 of two of them. This is
 * libsodium's blocklist (`ge25519_has_small_order` in crypto_core/ed25519/ref10/ed25519_ref10.c,
 * used by crypto_sign_ed25519_verify_detached). With each sign bit it covers the 8 small-order
 * points and their non-canonical encodings (14 encodings); test/unit/ed25519.test.ts re-derives
 * that each canonical entry is a point whose order divides 8.
 */
const SMALL_ORDER_Y: readonly string[] = [
  '0000000000000000000000000000000000000000000000000000000000000000', // y = 0: order 4 (x = ±sqrt(-1))
  '0100000000000000000000000000000000000000000000000000000000000000', // y = 1: the identity, order 1
  '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05', // order 8
  'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a', // order 8
  'ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f', // y = p - 1: order 2
  'edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f', // y = p: non-canonical y = 0
  'eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f', // y = p + 1: non-canonical y = 1
];

const KEY_CACHE_MAX = 10_000;
const keyCache = new Map<string, KeyObject>();

/**
 * True when `key` is not 32 bytes or encodes a point of small order (order 1, 2, 4 or 8),
 * canonically or not. Such a key with R = identity, S = 0 "verifies" any message, so the
 * prepare route refuses it as a signer key and verifyEd25519 refuses it again.
 */
export function isWeakPublicKey(key: Uint8Array): boolean {
  if (key.length !== 32) return true;
  const masked = Uint8Array.from(key);
  masked[31] &= 0x7f;
  return SMALL_ORDER_Y.includes(Buffer.from(masked).toString('hex'));
}

const P = (1n << 255n) - 19n;
const D = 37095705934669439343138083508754565189542113879843219016388785533085940283555n; // -121665/121666 mod p
const SQRT_M1 = 19681161376707505956807079304988542015446066515923890162744021073123829784752n; // 2^((p-1)/4) mod p

function modPow(base: bigint, exp: bigint): bigint {
  let result = 1n;
  base %= P;
  for (; exp > 0n; exp >>= 1n, base = (base * base) % P) if (exp & 1n) result = (result * base) % P;
  return result;
}

/**
 * True when `key` is 32 bytes that decode to a point of edwards25519 (RFC 8032 §5.1.3: y < p, x
 * recoverable from y, and not "-0"). OpenSSL imports any 32 bytes as a key and only fails at
 * verify, so without this an execution could be prepared for a signer that can never sign.
 */
export function isCurvePoint(key: Uint8Array): boolean {
  if (key.length !== 32) return false;
  let y = 0n;
  for (let i = 31; i >= 0; i--) y = (y << 8n) | BigInt(i === 31 ? key[i] & 0x7f : key[i]);
  if (y >= P) return false;
  const u = (y * y - 1n + P) % P;
  const v = (D * y * y + 1n) % P;
  // x = u v^3 (u v^7)^((p-5)/8), then fix it up by sqrt(-1) or fail (RFC 8032 §5.1.3 step 3).
  const v3 = (v * v * v) % P;
  let x = (u * v3 * modPow(u * v3 * v3 * v, (P - 5n) / 8n)) % P;
  const vxx = (v * x * x) % P;
  if (vxx !== u) {
    if (vxx !== (P - u) % P) return false;
    x = (x * SQRT_M1) % P;
  }
  return !(x === 0n && key[31] >> 7 === 1);
}

/** True when `sig` is 64 bytes and its S (the little-endian last 32 bytes) is below L. */
export function isCanonicalSignature(sig: Uint8Array): boolean {
  if (sig.length !== 64) return false;
  let s = 0n;
  for (let i = 63; i >= 32; i--) s = (s << 8n) | BigInt(sig[i]);
  return s < L;
}

function keyObjectOf(publicKey: Uint8Array): KeyObject {
  const id = toHex(publicKey);
  let key = keyCache.get(id);
  if (key !== undefined) {
    keyCache.delete(id); // re-insert: the Map's order is then least recently used first
  } else {
    const der = new Uint8Array(SPKI_PREFIX.length + 32);
    der.set(SPKI_PREFIX);
    der.set(publicKey, SPKI_PREFIX.length);
    key = createPublicKey({ key: Buffer.from(der), format: 'der', type: 'spki' });
    if (keyCache.size >= KEY_CACHE_MAX) keyCache.delete(keyCache.keys().next().value as string);
  }
  keyCache.set(id, key);
  return key;
}

/**
 * Verifies an ed25519 signature (RFC 8032, pure ed25519) of `message` by the raw 32-byte
 * `publicKey`. Returns false, never throws, for wrong lengths, a non-canonical S (S >= L), a
 * small-order key, a key that is not a curve point, or a signature that does not verify.
 */
export function verifyEd25519(message: Uint8Array, signature: Uint8Array, publicKey: Uint8Array): boolean {
  if (publicKey.length !== 32 || !isCanonicalSignature(signature) || isWeakPublicKey(publicKey)) return false;
  try {
    return verify(null, message, keyObjectOf(publicKey), signature);
  } catch {
    return false; // OpenSSL refuses some undecodable keys at import or at verify
  }
}
