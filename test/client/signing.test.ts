import assert from 'node:assert/strict';
import { nacl25519Signer, signCancel, signSubmit, signSubmitSync, walletOf, type Signer } from '@intent-service/client';
import nacl from 'tweetnacl';
import { verifyEd25519 } from '../../api/executions/ed25519';
import { intentHash } from '../../domain/canonical';
import { decodeKey, decodeSignature, toHex } from '../../domain/encoding';
import { buildCancelMessage, buildSigningMessage } from '../../domain/signing-message';

describe('client: the SDK signs what the service verifies', () => {
  const pair = nacl.sign.keyPair.fromSeed(new Uint8Array(32).fill(9));
  const wallet = walletOf({ publicKey: pair.publicKey });
  const input = { wallet, executionId: 'ex-1', intent: { b: [1, 2], a: 'x' }, domain: 'localhost', timestamp: 1_700_000_000 };

  it("when a submit is signed, then the service's verifier accepts the signature over the service's message, in hex and in base58", () => {
    const message = new TextEncoder().encode(
      buildSigningMessage({
        domain: 'localhost',
        executionId: 'ex-1',
        address: wallet,
        intentHash: intentHash(input.intent),
        timestamp: input.timestamp,
      }),
    );
    for (const encoding of ['hex', 'base58'] as const) {
      const body = signSubmitSync(nacl25519Signer(pair.secretKey), { ...input, encoding });
      assert.ok(verifyEd25519(message, decodeSignature(body.signature), decodeKey(body.publicKey)), encoding);
      assert.deepEqual(body.connectEnvelope, { address: wallet, domain: 'localhost', timestamp: input.timestamp });
    }
    assert.equal(signSubmitSync(nacl25519Signer(pair.secretKey), input).publicKey, toHex(pair.publicKey));
  });

  it("when a wallet's own asynchronous signMessage signs (its key as base58 text), then the body is the one nacl25519Signer gives, and the seed, the 64-byte key and their texts are one signer", async () => {
    const wallet58: Signer = { publicKey: wallet, signMessage: async (m) => nacl.sign.detached(m, pair.secretKey) };
    const fromWallet = await signSubmit(wallet58, { ...input, encoding: 'base58' });
    assert.deepEqual(fromWallet, signSubmitSync(nacl25519Signer(pair.secretKey), { ...input, encoding: 'base58' }));
    for (const key of [new Uint8Array(32).fill(9), toHex(pair.secretKey), toHex(new Uint8Array(32).fill(9))]) {
      assert.deepEqual(nacl25519Signer(key).publicKey, pair.publicKey);
    }
    const cancel = await signCancel(wallet58, { wallet, executionId: 'ex-1', domain: 'localhost', timestamp: input.timestamp });
    const cancelMessage = new TextEncoder().encode(
      buildCancelMessage({ domain: 'localhost', executionId: 'ex-1', address: wallet, timestamp: input.timestamp }),
    );
    assert.ok(verifyEd25519(cancelMessage, decodeSignature(cancel.signature), decodeKey(cancel.publicKey)));
  });

  it('when a field holds a line break or the key has the wrong length, then signing throws a TypeError before anything is signed', () => {
    let signed = 0;
    const counting = { publicKey: pair.publicKey, signMessage: (m: Uint8Array) => (signed++, nacl.sign.detached(m, pair.secretKey)) };
    assert.throws(() => signSubmitSync(counting, { ...input, domain: 'localhost\nWallet: other' }), TypeError);
    assert.throws(() => nacl25519Signer(new Uint8Array(16)), TypeError);
    assert.equal(signed, 0);
  });
});
