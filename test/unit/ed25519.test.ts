import assert from 'node:assert/strict';
import { CANONICAL_SMALL_ORDER_COUNT, SMALL_ORDER_Y_HEX } from '../support/small-order-keys';
import { createPublicKey, verify } from 'node:crypto';
import nacl from 'tweetnacl';
import { isCanonicalSignature, isWeakPublicKey, verifyEd25519 } from '../../api/executions/ed25519';
import { add, addLToS, decodePoint, type Point } from '../support/edwards25519';

const utf8 = (s: string) => new TextEncoder().encode(s);
const fromHex = (h: string) => Uint8Array.from(Buffer.from(h, 'hex'));
const seed = (n: number) => Uint8Array.from({ length: 32 }, (_, i) => (i * 31 + n) & 0xff);

/** Node's verify without our guards, to record what OpenSSL alone does. */
function opensslVerify(msg: Uint8Array, sig: Uint8Array, key: Uint8Array): boolean {
  const der = Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), key]);
  return verify(null, msg, createPublicKey({ key: der, format: 'der', type: 'spki' }), sig);
}

function flipBit(bytes: Uint8Array, bit: number): Uint8Array {
  const out = Uint8Array.from(bytes);
  out[bit >> 3] ^= 1 << (bit & 7);
  return out;
}

function orderDivides8(pt: Point): boolean {
  let q = pt;
  for (let i = 0; i < 3; i++) q = add(q, q);
  return q.x === 0n && q.y === 1n;
}

describe('domain/ed25519', () => {
  it('when tweetnacl signs with generated keys, then verifyEd25519 accepts the signatures', () => {
    for (let n = 0; n < 5; n++) {
      const kp = n === 0 ? nacl.sign.keyPair() : nacl.sign.keyPair.fromSeed(seed(n));
      const msg = utf8(`localhost asks you to sign execution e-${n}`);
      const sig = nacl.sign.detached(msg, kp.secretKey);
      assert.equal(verifyEd25519(msg, sig, kp.publicKey), true);
      assert.equal(verifyEd25519(msg, sig, kp.publicKey), true, 'again, through the cached KeyObject');
    }
  });

  it('when a bit of the message, signature or key is flipped, then tweetnacl and verifyEd25519 agree (both refuse)', () => {
    const kp = nacl.sign.keyPair.fromSeed(seed(9));
    const msg = utf8('Intent: 0ad6145137e74e87b108824f461655df90782a2f480b2362b67d613b0a2f9f66');
    const sig = nacl.sign.detached(msg, kp.secretKey);
    const cases: Array<[string, Uint8Array, Uint8Array, Uint8Array]> = [];
    for (const bit of [0, 7, 100, msg.length * 8 - 1]) cases.push([`message bit ${bit}`, flipBit(msg, bit), sig, kp.publicKey]);
    for (const bit of [0, 130, 255, 256, 300, 500, 511]) cases.push([`signature bit ${bit}`, msg, flipBit(sig, bit), kp.publicKey]);
    for (const bit of [0, 64, 200, 254, 255]) cases.push([`key bit ${bit}`, msg, sig, flipBit(kp.publicKey, bit)]);
    for (const [what, m, s, k] of cases) {
      const ours = verifyEd25519(m, s, k);
      assert.equal(ours, nacl.sign.detached.verify(m, s, k), what);
      assert.equal(ours, false, what);
    }
  });

  it('when S is replaced by S + L, then verifyEd25519 refuses it while tweetnacl accepts it', () => {
    const kp = nacl.sign.keyPair.fromSeed(seed(3));
    const msg = utf8('pay 1');
    const sig = nacl.sign.detached(msg, kp.secretKey);
    const malleated = addLToS(sig);
    assert.equal(isCanonicalSignature(sig), true);
    assert.equal(isCanonicalSignature(malleated), false);
    assert.equal(verifyEd25519(msg, malleated, kp.publicKey), false);
    // Recorded behaviour: tweetnacl 1.0.3 does not check S < L; OpenSSL alone does.
    assert.equal(nacl.sign.detached.verify(msg, malleated, kp.publicKey), true);
    assert.equal(opensslVerify(msg, malleated, kp.publicKey), false);
  });

  it('when the all-zero key signs with R = identity and S = 0, then verifyEd25519 refuses what tweetnacl and OpenSSL accept', () => {
    const zeroKey = new Uint8Array(32);
    const sig = new Uint8Array(64);
    sig[0] = 1; // R = the identity (y = 1); S = 0
    // The all-zero key is a point of order 4, so this "signature" holds when 4 divides the
    // challenge hash: about one message in four. Find one deterministically.
    const msg = [...Array(64).keys()].map((i) => utf8(`msg${i}`)).find((m) => nacl.sign.detached.verify(m, sig, zeroKey));
    assert.ok(msg, 'some message verifies under the all-zero key');
    assert.equal(opensslVerify(msg, sig, zeroKey), true, 'recorded: OpenSSL accepts it too');
    assert.equal(isWeakPublicKey(zeroKey), true);
    assert.equal(verifyEd25519(msg, sig, zeroKey), false);
  });

  it('when the identity key signs with R = identity and S = 0, then every message passes tweetnacl and none passes verifyEd25519', () => {
    const identity = new Uint8Array(32);
    identity[0] = 1;
    const sig = new Uint8Array(64);
    sig[0] = 1;
    for (const text of ['a', 'b', 'anything at all']) {
      assert.equal(nacl.sign.detached.verify(utf8(text), sig, identity), true);
      assert.equal(verifyEd25519(utf8(text), sig, identity), false);
    }
  });

  it('when a key encodes a small-order point, with either sign bit, canonically or not, then isWeakPublicKey is true', () => {
    const ys = SMALL_ORDER_Y_HEX;
    for (const y of ys) {
      const enc = fromHex(y);
      assert.equal(isWeakPublicKey(enc), true, y);
      assert.equal(isWeakPublicKey(flipBit(enc, 255)), true, `${y} with the sign bit set`);
    }
  });

  it('when the blocklist entries are decoded on the curve, then each is a point whose order divides 8 and the base point is not', () => {
    const canonical = SMALL_ORDER_Y_HEX.slice(0, CANONICAL_SMALL_ORDER_COUNT);
    for (const y of canonical) {
      for (const enc of [fromHex(y), flipBit(fromHex(y), 255)]) {
        const pt = decodePoint(enc);
        assert.ok(pt, `${y} is on the curve`);
        assert.equal(orderDivides8(pt), true, y);
      }
    }
    const base = nacl.sign.keyPair.fromSeed(seed(1)).publicKey;
    assert.equal(orderDivides8(decodePoint(base)!), false);
    assert.equal(isWeakPublicKey(base), false);
  });

  it('when inputs have wrong lengths or the key is not a curve point, then verifyEd25519 returns false without throwing', () => {
    const kp = nacl.sign.keyPair.fromSeed(seed(4));
    const msg = utf8('x');
    const sig = nacl.sign.detached(msg, kp.secretKey);
    assert.equal(verifyEd25519(msg, sig.subarray(0, 63), kp.publicKey), false);
    assert.equal(verifyEd25519(msg, sig, kp.publicKey.subarray(0, 31)), false);
    assert.equal(verifyEd25519(msg, sig, Uint8Array.from([...kp.publicKey, 0])), false);
    // y = 2 has no x on edwards25519 (found by decodePoint), so the key decodes to nothing.
    const offCurve = new Uint8Array(32);
    offCurve[0] = 2;
    assert.equal(decodePoint(offCurve), undefined);
    assert.equal(verifyEd25519(msg, sig, offCurve), false);
    assert.equal(isCanonicalSignature(new Uint8Array(63)), false);
    assert.equal(isWeakPublicKey(new Uint8Array(31)), true);
  });
});
