import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { privateKeyToAddress } from 'viem/accounts';
import { createHash } from 'node:crypto';
import { depositKeyPath, depositPrivateKey, evmChainId } from '../../domain/deposit-key';
import {
  bip32DepositAddress,
  bip32DepositPrivateKey,
  depositAccountKey,
  depositXpub,
  parseDepositXpub,
  readDepositXpub,
} from '../../lib/deposit-derivation';
import { createDepositSeedFile, depositAddress, readDepositSeed } from '../../lib/deposit-seed';
import { readGasAccountKey } from '../../lib/gas-account-key';

const SEED = Uint8Array.from({ length: 32 }, (_, i) => i + 1);
const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

describe('deposit addresses (domain/deposit-key, lib/deposit-seed)', () => {
  it('when derived twice from the same seed, chain and workflow id, then the key and address are the same', () => {
    const a = depositAddress(SEED, 'evm:31337', 'exec:w:1', 'hmac-v0');
    assert.equal(depositAddress(SEED, 'evm:31337', 'exec:w:1', 'hmac-v0'), a);
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

  it('when a seed file is created, then it is 0600 with 64 hex digits, never replaced, and read back the same; malformed, missing or open to others, it is refused naming the file', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'deposit-seed-'));
    try {
      const file = path.join(dir, 'sub', 'deposit-seed');
      assert.throws(
        () => readDepositSeed(file),
        (err: Error) => err.message.includes(file) && /cannot read/.test(err.message),
      );
      assert.equal(createDepositSeedFile(file), true);
      const seed = readDepositSeed(file);
      assert.equal(seed.length, 32);
      assert.equal(fs.statSync(file).mode & 0o777, 0o600);
      assert.match(fs.readFileSync(file, 'utf8'), /^[0-9a-f]{64}\n$/);
      assert.equal(createDepositSeedFile(file), false);
      assert.deepEqual(readDepositSeed(file), seed);
      for (const mode of [0o640, 0o604, 0o644, 0o660]) {
        fs.chmodSync(file, mode);
        assert.throws(
          () => readDepositSeed(file),
          (err: Error) => err.message.includes(file) && err.message.includes(`mode 0${mode.toString(8)}`),
          mode.toString(8),
        );
      }
      assert.deepEqual(readDepositSeed(file, { anyMode: true }), seed, 'the seed command still compares a backup left open (it warns)');
      fs.chmodSync(file, 0o400);
      assert.deepEqual(readDepositSeed(file), seed);
      fs.chmodSync(file, 0o600);
      fs.writeFileSync(file, 'not hex\n');
      assert.throws(() => readDepositSeed(file), /must hold 64 hex digits/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('when the gas account key file is open to group or others, then it is refused naming the file and its mode', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gas-key-'));
    try {
      const file = path.join(dir, 'gas-key');
      fs.writeFileSync(file, '0x' + '11'.repeat(32) + '\n', { mode: 0o644 });
      fs.chmodSync(file, 0o644);
      assert.throws(
        () => readGasAccountKey(file),
        (err: Error) => err.message.includes(file) && err.message.includes('mode 0644'),
      );
      fs.chmodSync(file, 0o600);
      assert.match(readGasAccountKey(file).address, /^0x[0-9a-fA-F]{40}$/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('deposit addresses by BIP32 (domain/deposit-key depositKeyPath, lib/deposit-derivation)', () => {
  it('when the path of an execution is derived, then it is SHA-256 of the label, chain and id cut into four 31-bit indices, the same for ever (known values)', () => {
    const digest = createHash('sha256').update('intent-service deposit address v1\nevm:1\nexec:abc:x').digest();
    const expected = [0, 1, 2, 3].map((i) => digest.readUInt32BE(i * 4) & 0x7fffffff);
    assert.deepEqual(depositKeyPath('evm:1', 'exec:abc:x'), expected);
    assert.deepEqual(depositKeyPath('evm:1', 'exec:abc:x'), [1070059049, 1533571579, 431480714, 431603553]);
    // The address and key of a known seed: a change of label, account path or depth changes them.
    assert.equal(
      depositXpub(SEED),
      'xpub6BHuHZeMvsiXuAUEBXq2y8ng3CRC67uhgfgzt4wU8STNM84T9LWnPhQ2wBrtWLy1AqkNRcUNvD1GYzubLmZ1VBnAmNjdshXHC6w2LAM5i5d',
    );
    assert.equal(
      bip32DepositAddress(parseDepositXpub(depositXpub(SEED)), 'evm:1', 'exec:abc:x'),
      '0xFD696B96662025e4449CBC6d47DD92650fBb8ABa',
    );
    assert.equal(
      bip32DepositPrivateKey(depositAccountKey(SEED), 'evm:1', 'exec:abc:x'),
      '0x0228989d288b86b4e56965cf3e2ae77c21b24c9f6e710a8ca8b3e823c2e5ccfd',
    );
  });

  it('property: the address the public key derives is the address of the key the seed derives; indices stay below 2^31; another id or chain gives another address', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.string(), fc.string(), (seed, id1, id2) => {
        const account = depositAccountKey(seed);
        const xpub = parseDepositXpub(depositXpub(seed));
        const address = bip32DepositAddress(xpub, 'evm:1', id1);
        assert.equal(privateKeyToAddress(bip32DepositPrivateKey(account, 'evm:1', id1)), address);
        assert.equal(depositAddress(seed, 'evm:1', id1, 'bip32-v1'), address);
        for (const index of depositKeyPath('evm:1', id1)) assert.ok(index >= 0 && index < 2 ** 31);
        if (id1 !== id2) assert.notEqual(bip32DepositAddress(xpub, 'evm:1', id2), address);
        assert.notEqual(bip32DepositAddress(xpub, 'evm:2', id1), address);
        assert.notEqual(depositAddress(seed, 'evm:1', id1, 'hmac-v0'), address, 'the two derivations never meet');
      }),
      { numRuns: 40 },
    );
  });

  it('when the API is given an extended private key or anything but an xpub, then it is refused; a missing file is refused naming it', () => {
    const xprv = depositAccountKey(SEED).privateExtendedKey;
    assert.throws(() => parseDepositXpub(xprv), /extended private key/);
    assert.throws(() => parseDepositXpub('xpub-not-really'), /not an extended public key/);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'deposit-xpub-'));
    try {
      const file = path.join(dir, 'deposit-xpub');
      assert.throws(
        () => readDepositXpub(file),
        (err: Error) => err.message.includes(file) && err.message.includes('DEPOSIT_XPUB_FILE'),
      );
      fs.writeFileSync(file, `${xprv}\n`);
      assert.throws(
        () => readDepositXpub(file),
        (err: Error) => err.message.includes(file) && /extended private key/.test(err.message),
      );
      fs.writeFileSync(file, `${depositXpub(SEED)}\n`);
      assert.equal(readDepositXpub(file).privateKey, null);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
