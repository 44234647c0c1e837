import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { privateKeyToAddress } from 'viem/accounts';
import { depositPrivateKey, evmChainId } from '../../domain/deposit-key';
import { createDepositSeedFile, depositAddress, loadDepositSeed } from '../../lib/deposit-seed';

const SEED = Uint8Array.from({ length: 32 }, (_, i) => i + 1);
const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

describe('deposit addresses (domain/deposit-key, lib/deposit-seed)', () => {
  it('when derived twice from the same seed, chain and workflow id, then the key and address are the same', () => {
    const a = depositAddress(SEED, 'evm:31337', 'exec:w:1');
    assert.equal(depositAddress(SEED, 'evm:31337', 'exec:w:1'), a);
    assert.match(a, /^0x[0-9a-fA-F]{40}$/);
    assert.equal(privateKeyToAddress(depositPrivateKey(SEED, 'evm:31337', 'exec:w:1')), a);
  });

  it('when the key is HMAC-SHA256(seed, "deposit:" + chain + ":" + workflowId), then a known vector matches', () => {
    // node:crypto computes the same HMAC independently of @noble/hashes.
    const expected = '0x' + createHmac('sha256', SEED).update('deposit:evm:1:exec:abc:x').digest('hex');
    assert.equal(depositPrivateKey(SEED, 'evm:1', 'exec:abc:x'), expected);
  });

  it('property: keys are in the secp256k1 range and differ per workflow id, chain and seed', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.string(), fc.string(), (seed, id1, id2) => {
        const k1 = depositPrivateKey(seed, 'evm:1', id1);
        const v = BigInt(k1);
        assert.ok(v >= 1n && v < N);
        if (id1 !== id2) assert.notEqual(depositPrivateKey(seed, 'evm:1', id2), k1);
        assert.notEqual(depositPrivateKey(seed, 'evm:2', id1), k1);
      }),
      { numRuns: 200 },
    );
  });

  it('when the seed is shorter than 32 bytes, then derivation refuses', () => {
    assert.throws(() => depositPrivateKey(new Uint8Array(16), 'evm:1', 'x'), /at least 32 bytes/);
  });

  it('when the chain name is evm:<id>, then its id is read; anything else is undefined', () => {
    assert.equal(evmChainId('evm:31337'), 31337);
    for (const bad of ['evm:0', 'evm:01', 'evm:', 'solana', 'evm:1a', 'evm:-1']) assert.equal(evmChainId(bad), undefined, bad);
  });

  it('when the seed file is missing, then it is created 0600 with 64 hex digits once, and read back the same', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'deposit-seed-'));
    try {
      const file = path.join(dir, 'sub', 'deposit-seed');
      const seed = loadDepositSeed(file);
      assert.equal(seed.length, 32);
      assert.equal(fs.statSync(file).mode & 0o777, 0o600);
      assert.match(fs.readFileSync(file, 'utf8'), /^[0-9a-f]{64}\n$/);
      assert.equal(createDepositSeedFile(file), false);
      assert.deepEqual(loadDepositSeed(file), seed);
      fs.writeFileSync(file, 'not hex\n');
      assert.throws(() => loadDepositSeed(file), /must hold 64 hex digits/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
