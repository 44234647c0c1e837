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

/**
 * How a deposit address's key is derived; each registered address records its own (the read
 * model's `deposit_addresses.key_derivation`):
 * - `hmac-v0`: HMAC-SHA256 of the seed (depositPrivateKey above): addresses issued before public
 *   derivation; only a holder of the seed derives them, so the API needed it.
 * - `bip32-v1`: a non-hardened BIP32 child of the account key DEPOSIT_ACCOUNT_PATH of the seed
 *   (the seed is the BIP32 master seed), at the path depositKeyPath gives: the API derives the
 *   address from the account's extended public key alone (docs/decisions/0092).
 */
export type KeyDerivation = 'hmac-v0' | 'bip32-v1';

/** The hardened account under the BIP32 master key of the seed whose extended public key the API holds. */
export const DEPOSIT_ACCOUNT_PATH = "m/8020'/0'";

/** What depositKeyPath hashes first: a new scheme gets a new label, never another meaning for this one. */
const PATH_LABEL = 'intent-service deposit address v1';

/** Indices under the account key: 4 × 31 bits of SHA-256, so two executions share an address with probability about 2^-124 per pair. */
const PATH_DEPTH = 4;

/**
 * The non-hardened BIP32 path, under the account key, of an execution's deposit address on
 * `chain`: SHA-256(label "\n" chain "\n" workflowId) cut into PATH_DEPTH big-endian 32-bit words,
 * each with its top bit cleared (an index below 2^31: non-hardened, derivable from the public
 * key). Stateless and stable: the same chain and id give the same path for ever (a test holds
 * known values).
 */
export function depositKeyPath(chain: string, workflowId: string): number[] {
  const digest = sha256(utf8ToBytes(`${PATH_LABEL}\n${chain}\n${workflowId}`));
  const view = new DataView(digest.buffer, digest.byteOffset, digest.byteLength);
  return Array.from({ length: PATH_DEPTH }, (_, i) => view.getUint32(i * 4) & 0x7fffffff);
}
