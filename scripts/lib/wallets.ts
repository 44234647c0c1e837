import { randomUUID } from 'node:crypto';
import nacl from 'tweetnacl';
import { nacl25519Signer, signSubmitSync } from '@intent-service/client';
import { toBase58 } from '../../domain/encoding';

/** A wallet as a frontend holds it: a tweetnacl key pair whose base58 public key is the wallet id. */
export interface TestWallet {
  id: string;
  secretKey: Uint8Array;
  publicKey: Uint8Array;
}

export function newWallet(): TestWallet {
  const pair = nacl.sign.keyPair();
  return { id: toBase58(pair.publicKey), secretKey: pair.secretKey, publicKey: pair.publicKey };
}

export const nowSeconds = () => Math.floor(Date.now() / 1000);

export const sampleIntent = () => ({
  action: 'swap',
  from: { chain: 'solana', token: 'USDC', amount: '125.50' },
  to: { chain: 'base', token: 'ETH' },
  nonce: randomUUID(),
});

/** A valid submit body for an execution, signed by the SDK as a frontend would. */
export function signedBody(
  wallet: TestWallet,
  executionId: string,
  intent: unknown,
  options: { domain?: string; timestamp?: number; encoding?: 'hex' | 'base58' } = {},
) {
  return signSubmitSync(nacl25519Signer(wallet.secretKey), {
    wallet: wallet.id,
    executionId,
    intent,
    domain: options.domain ?? 'localhost',
    timestamp: options.timestamp ?? nowSeconds(),
    encoding: options.encoding,
  });
}
