import assert from 'node:assert/strict';
import { decodeKey, decodeSignature, toBase58, toHex } from '../../domain/encoding';
import { ServiceError } from '../../domain/errors';

const isBadRequest = (e: unknown) => e instanceof ServiceError && e.status === 400;

const key = Uint8Array.from({ length: 32 }, (_, i) => i * 7 + 1);
const sig = Uint8Array.from({ length: 64 }, (_, i) => 255 - i * 3);

describe('domain/encoding', () => {
  it('when a key is 0x-hex in lower, upper or mixed case, then decodeKey returns its 32 bytes', () => {
    const hex = toHex(key);
    assert.match(hex, /^0x[0-9a-f]{64}$/);
    assert.deepEqual(decodeKey(hex), key);
    assert.deepEqual(decodeKey('0x' + hex.slice(2).toUpperCase()), key);
    assert.deepEqual(decodeKey('0x' + hex.slice(2, 10).toUpperCase() + hex.slice(10)), key);
  });

  it('when a key is base58, then decodeKey returns its 32 bytes', () => {
    assert.deepEqual(decodeKey(toBase58(key)), key);
    assert.deepEqual(decodeKey('11111111111111111111111111111111'), new Uint8Array(32));
  });

  it('when a signature is 0x-hex or base58, then decodeSignature returns its 64 bytes', () => {
    assert.deepEqual(decodeSignature(toHex(sig)), sig);
    assert.deepEqual(decodeSignature(toBase58(sig)), sig);
  });

  it('when toHex and toBase58 encode known bytes, then they give the known texts', () => {
    assert.equal(toHex(Uint8Array.from([0, 0xab, 0x10])), '0x00ab10');
    assert.equal(toBase58(new TextEncoder().encode('Hello World!')), '2NEpo7TZRRrLZSi2U');
  });

  const badKeys: Array<[string, unknown]> = [
    ['empty string', ''],
    ['bare 0x', '0x'],
    ['odd-length hex', '0x' + 'a'.repeat(63)],
    ['non-hex digit', '0x' + 'g'.repeat(64)],
    ['31 bytes of hex', '0x' + 'ab'.repeat(31)],
    ['33 bytes of hex', '0x' + 'ab'.repeat(33)],
    ['64 bytes of hex (a signature)', toHex(sig)],
    ['0X prefix', '0X' + 'ab'.repeat(32)],
    ['hex with spaces', '0x ' + 'ab'.repeat(32)],
    ['base58 with 0', '0' + toBase58(key).slice(1)],
    ['base58 with O, I, l', 'OIl' + toBase58(key).slice(3)],
    ['base58 with whitespace', ' ' + toBase58(key)],
    ['base58 of 31 bytes', toBase58(key.subarray(1))],
    ['base58 of 33 bytes', toBase58(Uint8Array.from([1, ...key]))],
    ['a very long string', '1'.repeat(100_000)],
    ['not a string', 42],
    ['undefined', undefined],
  ];
  for (const [what, value] of badKeys) {
    it(`when a key is ${what}, then decodeKey throws a 400 ServiceError naming the expected form`, () => {
      assert.throws(
        () => decodeKey(value as string),
        (e: unknown) => isBadRequest(e) && (e as Error).message === 'publicKey must be 32 bytes as 0x-hex or base58',
      );
    });
  }

  const badSignatures: Array<[string, string]> = [
    ['empty string', ''],
    ['bare 0x', '0x'],
    ['odd-length hex', '0x' + 'a'.repeat(127)],
    ['63 bytes of hex', '0x' + 'ab'.repeat(63)],
    ['32 bytes of hex (a key)', toHex(key)],
    ['base58 with a non-alphabet character', toBase58(sig).slice(0, -1) + '_'],
    ['base58 of 65 bytes', toBase58(Uint8Array.from([7, ...sig]))],
  ];
  for (const [what, value] of badSignatures) {
    it(`when a signature is ${what}, then decodeSignature throws a 400 ServiceError`, () => {
      assert.throws(
        () => decodeSignature(value),
        (e: unknown) => isBadRequest(e) && (e as Error).message === 'signature must be 64 bytes as 0x-hex or base58',
      );
    });
  }
});
