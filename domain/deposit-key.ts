import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';

/** The order of secp256k1's group: a private key is an integer in [1, n − 1]. */
const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

/** A deposit chain as prepare names it: `evm:` and a decimal chain id. */
export const EVM_CHAIN = /^evm:([1-9][0-9]{0,18})$/;

/** The chain id of an `evm:<chainId>` name, or undefined. */
export function evmChainId(chain: string): number | undefined {
  const m = EVM_CHAIN.exec(chain);
  if (!m) return undefined;
  const id = Number(m[1]);
  return Number.isSafeInteger(id) ? id : undefined;
}

/**
 * The private key of an execution's deposit address (docs/decisions/0071-chain-watcher.md):
 * HMAC-SHA256(seed, "deposit:" + chain + ":" + workflowId), read as a big-endian integer; a value
 * outside [1, n − 1] (probability about 2^-128) is replaced by HMAC(seed, message + ":" + attempt)
 * for attempt 1, 2, … The same seed, chain and workflow id give the same key, so an idempotent
 * prepare answers the same address; another execution or chain gives an unrelated one.
 * Returns `0x` + 64 lowercase hex digits.
 */
export function depositPrivateKey(seed: Uint8Array, chain: string, workflowId: string): `0x${string}` {
  if (seed.length < 32) throw new Error('the deposit seed must be at least 32 bytes');
  const message = `deposit:${chain}:${workflowId}`;
  for (let attempt = 0; ; attempt++) {
    const mac = hmac(sha256, seed, utf8ToBytes(attempt === 0 ? message : `${message}:${attempt}`));
    const value = BigInt(`0x${bytesToHex(mac)}`);
    if (value >= 1n && value < SECP256K1_N) return `0x${bytesToHex(mac)}`;
  }
}
