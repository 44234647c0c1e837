import nacl from 'tweetnacl';
import bs58 from 'bs58';
import { intentHash } from '../../domain/canonical.js';
import { toBase58, toHex } from '../../domain/encoding.js';
import { buildCancelMessage, buildRefundAddressMessage, buildSigningMessage } from '../../domain/signing-message.js';
import type { CancelRequest, RefundAddressRequest, SubmitRequest } from './types.js';

// The messages and the intent hash are the service's own code (domain/), bundled into this package:
// what the SDK signs is what the API verifies.
export { buildCancelMessage, buildRefundAddressMessage, buildSigningMessage, intentHash };

type ConnectEnvelope = CancelRequest['connectEnvelope'];

/**
 * What signs for a wallet: an ed25519 key held by the page (nacl25519Signer) or a wallet's own
 * `signMessage` (Phantom, Solflare, …), which signs the UTF-8 bytes of the message.
 */
export interface Signer {
  /** The 32-byte ed25519 public key, or its base58 or 0x-hex text. */
  readonly publicKey: Uint8Array | string;
  signMessage(message: Uint8Array): Uint8Array | Promise<Uint8Array>;
}

/** A signer that answers at once (a key in memory): the Sync functions take it. */
export interface SyncSigner extends Signer {
  readonly publicKey: Uint8Array;
  signMessage(message: Uint8Array): Uint8Array;
}

/**
 * A signer over an ed25519 secret key held in memory (tweetnacl): the 64-byte secret key or the
 * 32-byte seed, as bytes, 0x-hex or base58.
 */
export function nacl25519Signer(secretKey: Uint8Array | string): SyncSigner {
  let bytes = typeof secretKey === 'string' ? decodeSecretText(secretKey) : secretKey;
  if (bytes.length === 32) bytes = nacl.sign.keyPair.fromSeed(bytes).secretKey;
  if (bytes.length !== 64) throw new TypeError('an ed25519 secret key is 64 bytes (or a 32-byte seed)');
  const key = Uint8Array.from(bytes);
  return { publicKey: key.slice(32), signMessage: (message) => nacl.sign.detached(message, key) };
}

function decodeSecretText(text: string): Uint8Array {
  if (/^0x(?:[0-9a-fA-F]{2})+$/.test(text)) return Uint8Array.from(text.slice(2).match(/../g)!, (h) => parseInt(h, 16));
  const bytes = bs58.decodeUnsafe(text);
  if (bytes === undefined) throw new TypeError('a secret key is 0x-hex or base58 text');
  return bytes;
}

/** How a signed body spells its key and signature. */
export type KeyEncoding = 'hex' | 'base58';

export interface SubmitSigning {
  wallet: string;
  executionId: string;
  /** The intent as prepared (hashed here), or its `intentHash` from the record. */
  intent?: unknown;
  intentHash?: string;
  /** The dApp domain of the wallet connection: one of the service's ALLOWED_DOMAINS. */
  domain: string;
  /** Unix seconds; now by default. It must be within the service's ENVELOPE_MAX_AGE_S of its clock. */
  timestamp?: number;
  encoding?: KeyEncoding;
}

export type CancelSigning = Omit<SubmitSigning, 'intent' | 'intentHash'>;

const nowSeconds = () => Math.floor(Date.now() / 1000);

/** The service's message builders reject a field with a line break; here that is a bad argument. */
function local<T>(build: () => T): T {
  try {
    return build();
  } catch (err) {
    throw new TypeError((err as Error).message);
  }
}

const spell = (bytes: Uint8Array, encoding: KeyEncoding = 'hex') => (encoding === 'base58' ? toBase58(bytes) : toHex(bytes));
const spellKey = (key: Uint8Array | string, encoding?: KeyEncoding) => (typeof key === 'string' ? key : spell(key, encoding));

function submitParts(input: SubmitSigning) {
  const hash = input.intentHash ?? (input.intent !== undefined ? local(() => intentHash(input.intent)) : undefined);
  if (hash === undefined) throw new TypeError('submit needs the intent or its intentHash');
  const timestamp = input.timestamp ?? nowSeconds();
  const message = local(() =>
    buildSigningMessage({ domain: input.domain, executionId: input.executionId, address: input.wallet, intentHash: hash, timestamp }),
  );
  const envelope = { address: input.wallet, domain: input.domain, timestamp };
  return { message: new TextEncoder().encode(message), envelope };
}

/** What a refund address command signs: the cancel's fields and the address. */
export type RefundAddressSigning = CancelSigning & { refundAddress: string };

function refundAddressParts(input: RefundAddressSigning) {
  const timestamp = input.timestamp ?? nowSeconds();
  const message = local(() =>
    buildRefundAddressMessage({
      domain: input.domain,
      executionId: input.executionId,
      address: input.wallet,
      refundAddress: input.refundAddress,
      timestamp,
    }),
  );
  return { message: new TextEncoder().encode(message), envelope: { address: input.wallet, domain: input.domain, timestamp } };
}

/** The body of `POST /api/v1/executions/{wallet}/{executionId}/refund-address`, signed by `signer`. */
export async function signRefundAddress(signer: Signer, input: RefundAddressSigning): Promise<RefundAddressRequest> {
  return { refundAddress: input.refundAddress, ...(await signedParts(signer, refundAddressParts(input), input.encoding)) };
}

function cancelParts(input: CancelSigning) {
  const timestamp = input.timestamp ?? nowSeconds();
  const message = local(() =>
    buildCancelMessage({ domain: input.domain, executionId: input.executionId, address: input.wallet, timestamp }),
  );
  return { message: new TextEncoder().encode(message), envelope: { address: input.wallet, domain: input.domain, timestamp } };
}

/** The key, signature and envelope of a signed body: `parts`' message signed by `signer`. */
async function signedParts(signer: Signer, parts: { message: Uint8Array; envelope: ConnectEnvelope }, encoding?: KeyEncoding) {
  const signature = await signer.signMessage(parts.message);
  return { publicKey: spellKey(signer.publicKey, encoding), signature: spell(signature, encoding), connectEnvelope: parts.envelope };
}

/** The body of `POST /api/v1/executions/{wallet}/submit`, signed by `signer`. */
export async function signSubmit(signer: Signer, input: SubmitSigning): Promise<SubmitRequest> {
  return { executionId: input.executionId, ...(await signedParts(signer, submitParts(input), input.encoding)) };
}

/** signSubmit for a signer that answers at once. */
export function signSubmitSync(signer: SyncSigner, input: SubmitSigning): SubmitRequest {
  const { message, envelope } = submitParts(input);
  const signature = signer.signMessage(message);
  return {
    executionId: input.executionId,
    publicKey: spell(signer.publicKey, input.encoding),
    signature: spell(signature, input.encoding),
    connectEnvelope: envelope,
  };
}

/** The body of `POST /api/v1/executions/{wallet}/{executionId}/cancel`, signed by `signer`. */
export async function signCancel(signer: Signer, input: CancelSigning): Promise<CancelRequest> {
  return signedParts(signer, cancelParts(input), input.encoding);
}

/** signCancel for a signer that answers at once. */
export function signCancelSync(signer: SyncSigner, input: CancelSigning): CancelRequest {
  const { message, envelope } = cancelParts(input);
  const signature = signer.signMessage(message);
  return { publicKey: spell(signer.publicKey, input.encoding), signature: spell(signature, input.encoding), connectEnvelope: envelope };
}
