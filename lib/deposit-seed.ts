/**
 * The deposit seed file: 32 random bytes, as 64 hex digits and a newline, readable by its owner
 * only (0600). Every deposit address and its private key derive from it (domain/deposit-key.ts),
 * so the API creates it once and never replaces it.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { privateKeyToAddress } from 'viem/accounts';
import { depositPrivateKey } from '../domain/deposit-key';
import { createSecretFileOnce } from './durable-fs';

/**
 * The seed in `file`, created first (atomically, 0600) when it does not exist; two processes racing
 * to create it keep one seed. Throws naming the file (never the seed) when it cannot be read or is
 * not 64 hex digits.
 */
export function loadDepositSeed(file: string): Uint8Array {
  createDepositSeedFile(file);
  return readDepositSeed(file);
}

/** The seed in `file`, which must exist (a worker never creates one). Throws naming the file (never the seed). */
export function readDepositSeed(file: string): Uint8Array {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8').trim();
  } catch (err) {
    throw new Error(`cannot read the deposit seed file ${file}: ${(err as Error).message}`);
  }
  if (!/^[0-9a-f]{64}$/i.test(text)) throw new Error(`the deposit seed file ${file} must hold 64 hex digits`);
  return Uint8Array.from(Buffer.from(text, 'hex'));
}

/** Creates `file` with a fresh seed unless it exists (written and synced under a temporary name, then hard-linked). Returns whether it did. */
export function createDepositSeedFile(file: string): boolean {
  return createSecretFileOnce(file, () => `${randomBytes(32).toString('hex')}\n`);
}

/** The EIP-55 deposit address of an execution on `chain`. */
export function depositAddress(seed: Uint8Array, chain: string, workflowId: string): `0x${string}` {
  return privateKeyToAddress(depositPrivateKey(seed, chain, workflowId));
}
