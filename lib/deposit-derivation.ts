/**
 * Deposit addresses and their keys by BIP32 (docs/decisions/0092): the seed is the master seed,
 * DEPOSIT_ACCOUNT_PATH its hardened account, and each execution's address a non-hardened child at
 * depositKeyPath. The API holds the account's extended public key only (DEPOSIT_XPUB_FILE) and
 * derives addresses; the workers hold the seed and derive the keys to sign with.
 */
import fs from 'node:fs';
import { secp256k1 } from '@noble/curves/secp256k1';
import { HDKey } from '@scure/bip32';
import { bytesToHex } from '@noble/hashes/utils.js';
import { publicKeyToAddress } from 'viem/accounts';
import { DEPOSIT_ACCOUNT_PATH, depositKeyPath } from '../domain/deposit-key';

/** The account key (private) of `seed`. */
export function depositAccountKey(seed: Uint8Array): HDKey {
  return HDKey.fromMasterSeed(seed).derive(DEPOSIT_ACCOUNT_PATH);
}

/** The account's extended public key (`xpub…`): what `npm run seed -- xpub` exports for the APIs. */
export function depositXpub(seed: Uint8Array): string {
  return depositAccountKey(seed).publicExtendedKey;
}

/**
 * The public account key of `text` (an `xpub…`, surrounding white space allowed). Throws when it is
 * not one, and when it is an extended private key (`xprv…`): the API must never hold one.
 */
export function parseDepositXpub(text: string): HDKey {
  const trimmed = text.trim();
  let key: HDKey;
  try {
    key = HDKey.fromExtendedKey(trimmed);
  } catch {
    throw new Error('not an extended public key (xpub…)');
  }
  if (key.privateKey) throw new Error('an extended private key: the API takes the extended public key (npm run seed -- xpub)');
  return key;
}

const childOf = (account: HDKey, chain: string, workflowId: string): HDKey =>
  depositKeyPath(chain, workflowId).reduce((key, index) => key.deriveChild(index), account);

/** The EIP-55 deposit address of an execution on `chain`, from the account key (public or private). */
export function bip32DepositAddress(account: HDKey, chain: string, workflowId: string): `0x${string}` {
  const compressed = childOf(account, chain, workflowId).publicKey;
  if (!compressed) throw new Error('the account key holds no public key');
  // A BIP32 public key is compressed (33 bytes); an EVM address hashes the uncompressed point.
  const uncompressed = secp256k1.ProjectivePoint.fromHex(compressed).toRawBytes(false);
  return publicKeyToAddress(`0x${bytesToHex(uncompressed)}`);
}

/** The private key of an execution's deposit address on `chain`, from the private account key. */
export function bip32DepositPrivateKey(account: HDKey, chain: string, workflowId: string): `0x${string}` {
  const key = childOf(account, chain, workflowId).privateKey;
  if (!key) throw new Error('the account key is public: it derives no private key');
  return `0x${bytesToHex(key)}`;
}

/**
 * The account's extended public key in `file` (DEPOSIT_XPUB_FILE), as the API holds it. Throws
 * naming the file when it cannot be read or holds no extended public key (an extended private key
 * included: it is refused).
 */
export function readDepositXpub(file: string): HDKey {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`cannot read the deposit public key file ${file} (DEPOSIT_XPUB_FILE): ${(err as Error).message}`);
  }
  try {
    return parseDepositXpub(text);
  } catch (err) {
    throw new Error(`the deposit public key file ${file} (DEPOSIT_XPUB_FILE) holds ${(err as Error).message}`);
  }
}
