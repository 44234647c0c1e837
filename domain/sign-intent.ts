import nacl from 'tweetnacl';
import { intentHash } from './canonical';
import { toBase58, toHex } from './encoding';
import { buildCancelMessage, buildSigningMessage } from './signing-message';

export interface SignIntentInput {
  /** 64-byte tweetnacl secret key (seed + public key). */
  secretKey: Uint8Array;
  wallet: string;
  executionId: string;
  intent: unknown;
  domain: string;
  /** Unix seconds. */
  timestamp: number;
  encoding?: 'hex' | 'base58';
}

/**
 * What a wallet frontend does: builds the signing message of an execution and signs it with
 * ed25519 (tweetnacl), returning a ready body for `POST /api/v1/executions/{wallet}/submit`.
 */
export function signSubmitBody(input: SignIntentInput) {
  const message = buildSigningMessage({
    domain: input.domain,
    executionId: input.executionId,
    address: input.wallet,
    intentHash: intentHash(input.intent),
    timestamp: input.timestamp,
  });
  const signature = nacl.sign.detached(new TextEncoder().encode(message), input.secretKey);
  const publicKey = input.secretKey.slice(32);
  const encode = input.encoding === 'base58' ? toBase58 : toHex;
  return {
    executionId: input.executionId,
    publicKey: encode(publicKey),
    signature: encode(signature),
    connectEnvelope: { address: input.wallet, domain: input.domain, timestamp: input.timestamp },
  };
}

/** Like signSubmitBody, for `POST /api/v1/executions/{wallet}/{executionId}/cancel`. */
export function signCancelBody(input: Omit<SignIntentInput, 'intent'>) {
  const message = buildCancelMessage({
    domain: input.domain,
    executionId: input.executionId,
    address: input.wallet,
    timestamp: input.timestamp,
  });
  const signature = nacl.sign.detached(new TextEncoder().encode(message), input.secretKey);
  const encode = input.encoding === 'base58' ? toBase58 : toHex;
  return {
    publicKey: encode(input.secretKey.slice(32)),
    signature: encode(signature),
    connectEnvelope: { address: input.wallet, domain: input.domain, timestamp: input.timestamp },
  };
}
