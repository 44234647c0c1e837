import assert from 'node:assert/strict';

// Minimal edwards25519 arithmetic (affine, BigInt), written out independently of domain/ed25519.ts
// so that tests can check the implementation against it: the small-order blocklist, point
// decoding, and the S + L spelling of a signature.

/** The order of the base point. */
const L = (1n << 252n) + 27742317777372353535851937790883648493n;
const P = (1n << 255n) - 19n;
const mod = (a: bigint) => ((a % P) + P) % P;
function pow(b: bigint, e: bigint): bigint {
  let r = 1n;
  b = mod(b);
  for (; e > 0n; e >>= 1n, b = mod(b * b)) if (e & 1n) r = mod(r * b);
  return r;
}
const inv = (a: bigint) => pow(a, P - 2n);
const D = mod(-121665n * inv(121666n));

export type Point = { x: bigint; y: bigint };

export function add(a: Point, b: Point): Point {
  const t = mod(D * a.x * b.x * a.y * b.y);
  return { x: mod((a.x * b.y + a.y * b.x) * inv(1n + t)), y: mod((a.y * b.y + a.x * b.x) * inv(1n - t)) };
}

/** The y of an encoding (its top bit cleared), not reduced mod p. */
function encodedY(enc: Uint8Array): bigint {
  let y = 0n;
  for (let i = 31; i >= 0; i--) y = (y << 8n) | BigInt(i === 31 ? enc[i] & 0x7f : enc[i]);
  return y;
}

/** The point with this y mod p (x's sign per the top bit), or undefined when none is on the curve. */
export function decodePoint(enc: Uint8Array): Point | undefined {
  const y = mod(encodedY(enc));
  const x2 = mod((y * y - 1n) * inv(D * y * y + 1n));
  let x = pow(x2, (P + 3n) / 8n);
  if (mod(x * x) !== x2) x = mod(x * pow(2n, (P - 1n) / 4n));
  if (mod(x * x) !== x2) return undefined;
  if (Number(x & 1n) !== enc[31] >> 7) x = mod(-x);
  return { x, y };
}

/** True for a canonical encoding of a curve point: y < p, on the curve, and no sign bit on x = 0. */
export function isCanonicalPointEncoding(enc: Uint8Array): boolean {
  if (encodedY(enc) >= P) return false;
  const point = decodePoint(enc);
  return point !== undefined && !(point.x === 0n && enc[31] >> 7 === 1);
}

/** R || (S + L), S little-endian: the same signature in the non-canonical spelling tweetnacl accepts. */
export function addLToS(sig: Uint8Array): Uint8Array {
  let s = 0n;
  for (let i = 63; i >= 32; i--) s = (s << 8n) | BigInt(sig[i]);
  s += L;
  const out = Uint8Array.from(sig);
  for (let i = 32; i < 64; i++) {
    out[i] = Number(s & 0xffn);
    s >>= 8n;
  }
  assert.equal(s, 0n, 'S + L fits in 32 bytes (true for every S < 2^256 - L, i.e. all but a negligible few)');
  return out;
}
