/**
 * The deposit seed file: 32 random bytes, as 64 hex digits and a newline, readable by its owner
 * only (0600). Every deposit address's private key derives from it (domain/deposit-key.ts,
 * lib/deposit-derivation.ts); only the workers and the seed command read it, and only
 * `npm run seed -- create` (or `npm start`'s first run) creates it.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { privateKeyToAddress } from 'viem/accounts';
import { depositPrivateKey, type KeyDerivation } from '../domain/deposit-key';
import { bip32DepositPrivateKey, depositAccountKey } from './deposit-derivation';
import { createSecretFileOnce } from './durable-fs';
import { readPrivateFile } from './secret-file';

const SEED_TEXT = /^[0-9a-f]{64}$/i;

/**
 * The seed in `file`, which must exist: no process makes one up (a worker or API that did would
 * derive addresses nobody else can). Refused when group or others may read it, unless
 * `anyMode` (the seed command reading a backup, which it warns about). Throws naming the file,
 * never the seed.
 */
export function readDepositSeed(file: string, options: { anyMode?: boolean } = {}): Uint8Array {
  let text: string;
  if (options.anyMode) {
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (err) {
      throw new Error(`cannot read the deposit seed file ${file}: ${(err as Error).message}`);
    }
  } else text = readPrivateFile(file, 'deposit seed file');
  if (!SEED_TEXT.test(text.trim())) throw new Error(`the deposit seed file ${file} must hold 64 hex digits`);
  return Uint8Array.from(Buffer.from(text.trim(), 'hex'));
}

/** Creates `file` with a fresh seed unless it exists (written and synced under a temporary name, then hard-linked). Returns whether it did. */
export function createDepositSeedFile(file: string): boolean {
  return createSecretFileOnce(file, () => `${randomBytes(32).toString('hex')}\n`);
}

/** The private key of an execution's deposit address on `chain`, by the derivation its address was registered with. */
export function depositKey(seed: Uint8Array, chain: string, workflowId: string, derivation: KeyDerivation): `0x${string}` {
  return derivation === 'hmac-v0'
    ? depositPrivateKey(seed, chain, workflowId)
    : bip32DepositPrivateKey(depositAccountKey(seed), chain, workflowId);
}

/** The EIP-55 deposit address of an execution on `chain`, by `derivation`, from the seed. */
export function depositAddress(seed: Uint8Array, chain: string, workflowId: string, derivation: KeyDerivation): `0x${string}` {
  return privateKeyToAddress(depositKey(seed, chain, workflowId, derivation));
}
