import assert from 'node:assert/strict';
import { SMALL_ORDER_Y_HEX } from '../support/small-order-keys';
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import nacl from 'tweetnacl';
import pino from 'pino';
import type { RunningApi } from '../../api/server';
import { isCurvePoint } from '../../api/executions/ed25519';
import { toBase58, toHex } from '../../domain/encoding';
import { request } from '../support/http';
import { addLToS, isCanonicalPointEncoding } from '../support/edwards25519';
import { getStack, startStackApi, type Stack } from '../support/stack';
import { getExecution, newWallet, nowSeconds, prepare, sampleIntent, signedBody, submit, type TestWallet } from '../support/executions';

// Signatures end to end: replays of a valid submit body, a non-canonical S, small-order and
// off-curve keys, through HTTP against the real stack. domain/ed25519.ts and its unit tests cover
// the primitives; this shows what a client gets.

/** R || (S + L): the same signature in the non-canonical spelling tweetnacl accepts. */
const withSPlusL = (signatureHex: string) => '0x' + Buffer.from(addLToS(Buffer.from(signatureHex.slice(2), 'hex'))).toString('hex');

/** libsodium's small-order blocklist (domain/ed25519.ts), each with both sign bits: 14 encodings. */
const SMALL_ORDER = SMALL_ORDER_Y_HEX.flatMap((hex) => {
  const b = Buffer.from(hex, 'hex');
  const flipped = Buffer.from(b);
  flipped[31] ^= 0x80;
  return [Uint8Array.from(b), Uint8Array.from(flipped)];
});

describe('signatures end to end: replays, S + L, small-order and off-curve keys (real HTTP)', function () {
  this.timeout(60_000);
  let stack: Stack;
  before(async () => {
    stack = await getStack();
  });

  async function prepared(wallet = newWallet(), executionId = `sig-${randomUUID()}`, intent: unknown = sampleIntent()) {
    const res = await prepare(stack, wallet, { executionId, intent });
    assert.equal(res.status, 201, res.text);
    return { wallet, executionId, intent };
  }

  describe('replay of an accepted submit body', () => {
    let a: { wallet: TestWallet; executionId: string; intent: unknown };
    let accepted: ReturnType<typeof signedBody>;
    before(async () => {
      a = await prepared();
      accepted = signedBody(a.wallet, a.executionId, a.intent);
      const res = await submit(stack, a.wallet.id, accepted);
      assert.equal(res.status, 200, res.text);
    });
    afterEach(async () => {
      // No replay changed what the execution holds.
      const record = (await getExecution(stack, a.wallet.id, a.executionId)).body.result;
      assert.equal(record.signedPayload.signature, accepted.signature);
    });

    it('when it is replayed against another execution of the same wallet (same intent), then it is 400: the message names the execution', async () => {
      const other = await prepared(a.wallet, `sig-${randomUUID()}`, a.intent);
      const res = await submit(stack, a.wallet.id, { ...accepted, executionId: other.executionId });
      assert.equal(res.status, 400, res.text);
      assert.match(res.body.error, /signature does not verify/);
    });

    it("when it is replayed, unchanged, at another wallet's path, then it is 400 (address is not the wallet)", async () => {
      const b = await prepared(newWallet(), a.executionId);
      const res = await submit(stack, b.wallet.id, accepted);
      assert.equal(res.status, 400, res.text);
      assert.match(res.body.error, /address does not match/);
    });

    it('when it is replayed for another wallet with the address rewritten, then it is 400 where that wallet has the execution id (another signer) and 404 where it has none', async () => {
      const b = await prepared(newWallet(), a.executionId);
      const rewritten = { ...accepted, connectEnvelope: { ...accepted.connectEnvelope, address: b.wallet.id } };
      const res = await submit(stack, b.wallet.id, rewritten);
      assert.equal(res.status, 400, res.text);
      assert.match(res.body.error, /not the signer key/);
      const c = newWallet();
      const none = await submit(stack, c.id, { ...accepted, connectEnvelope: { ...accepted.connectEnvelope, address: c.id } });
      assert.equal(none.status, 404, none.text);
    });

    it('when it is replayed with the domain rewritten to another allowed domain, then 400 (signature); to a domain not allowed, then 400 (domain)', async () => {
      const other = await submit(stack, a.wallet.id, {
        ...accepted,
        connectEnvelope: { ...accepted.connectEnvelope, domain: 'app.example' },
      });
      assert.equal(other.status, 400, other.text);
      assert.match(other.body.error, /signature does not verify/);
      const evil = await submit(stack, a.wallet.id, {
        ...accepted,
        connectEnvelope: { ...accepted.connectEnvelope, domain: 'evil.example' },
      });
      assert.equal(evil.status, 400);
      assert.match(evil.body.error, /domain is not allowed/);
      // A body honestly signed for the other domain is a different signature: 409, not a replay.
      const signedThere = signedBody(a.wallet, a.executionId, a.intent, { domain: 'app.example' });
      assert.equal((await submit(stack, a.wallet.id, signedThere)).status, 409);
    });

    it('when a body signed for a domain not allowed is sent, then it is 400 before any lookup', async () => {
      const res = await submit(stack, a.wallet.id, signedBody(a.wallet, a.executionId, a.intent, { domain: 'evil.example' }));
      assert.equal(res.status, 400);
      assert.match(res.body.error, /domain is not allowed/);
    });
  });

  describe('replay after ENVELOPE_MAX_AGE_S', () => {
    // A second API on the same Temporal with a 4 s envelope age, so the age passes during the test.
    const MAX_AGE_S = 4;
    let shortApi: RunningApi;
    before(async () => {
      shortApi = await startStackApi(stack, {
        config: { ...stack.config, port: 0, envelopeMaxAgeS: MAX_AGE_S },
        logger: pino({ level: 'silent' }),
      });
    });
    after(async () => {
      await shortApi?.close(1000);
    });

    it('when an accepted body is replayed after ENVELOPE_MAX_AGE_S, then it is 400 (its timestamp is too old), even though the same body was a safe retry before', async function () {
      this.timeout(30_000);
      const { wallet, executionId, intent } = await prepared();
      // Signed for the next whole second, so the body is fresh for about MAX_AGE_S + 1 s from now.
      const timestamp = nowSeconds() + 1;
      const body = signedBody(wallet, executionId, intent, { timestamp });
      const post = () => request(shortApi.url, 'POST', `/api/v1/executions/${wallet.id}/submit`, { json: body });
      assert.equal((await post()).status, 200);
      assert.equal((await post()).status, 200, 'a retry within the age is safe');
      await new Promise((r) => setTimeout(r, Math.max(0, (timestamp + MAX_AGE_S + 1) * 1000 - Date.now())));
      const late = await post();
      assert.equal(late.status, 400, late.text);
      assert.match(late.body.error, new RegExp(`timestamp is more than ${MAX_AGE_S} s from now`));
      // On the main API (300 s) a body signed 301 s ago is refused the same way.
      const old = signedBody(wallet, executionId, intent, { timestamp: nowSeconds() - 301 });
      const res = await submit(stack, wallet.id, old);
      assert.equal(res.status, 400);
      assert.match(res.body.error, /timestamp/);
    });
  });

  describe('non-canonical signature S + L', () => {
    it('when the S + L form of a valid signature is submitted, then tweetnacl would accept it but the API answers 400, before and after the canonical one is stored', async () => {
      const { wallet, executionId, intent } = await prepared();
      const body = signedBody(wallet, executionId, intent);
      const malleable = withSPlusL(body.signature);
      assert.notEqual(malleable, body.signature);

      // What tweetnacl alone would do with it (the reason the API does not verify with tweetnacl).
      const record = (await getExecution(stack, wallet.id, executionId)).body.result;
      const message = new TextEncoder().encode(
        `localhost asks you to sign execution ${executionId}\nWallet: ${wallet.id}\nIntent: ${record.intentHash}\nTimestamp: ${body.connectEnvelope.timestamp}`,
      );
      assert.equal(nacl.sign.detached.verify(message, Buffer.from(body.signature.slice(2), 'hex'), wallet.publicKey), true);
      assert.equal(
        nacl.sign.detached.verify(message, Buffer.from(malleable.slice(2), 'hex'), wallet.publicKey),
        true,
        'tweetnacl accepts S + L',
      );

      for (const encoded of [malleable, toBase58(Buffer.from(malleable.slice(2), 'hex'))]) {
        const res = await submit(stack, wallet.id, { ...body, signature: encoded });
        assert.equal(res.status, 400, res.text);
        assert.match(res.body.error, /signature does not verify/);
      }
      assert.equal((await getExecution(stack, wallet.id, executionId)).body.result.signedPayload, undefined, 'nothing stored');
      assert.equal((await submit(stack, wallet.id, body)).status, 200);
      // Once the canonical signature is held, S + L is still 400 (not 200 as a "retry", not 409).
      const again = await submit(stack, wallet.id, { ...body, signature: malleable });
      assert.equal(again.status, 400, again.text);
      assert.equal((await getExecution(stack, wallet.id, executionId)).body.result.signedPayload.signature, body.signature);
    });
  });

  describe('small-order and off-curve public keys', () => {
    it('when tweetnacl is given the identity key (small order) with R = identity and S = 0, then it "verifies" any message: the forgery the API must refuse', () => {
      const identity = SMALL_ORDER[2];
      const forged = new Uint8Array(64);
      forged[0] = 1;
      for (const text of ['anything', 'localhost asks you to sign execution x']) {
        assert.equal(nacl.sign.detached.verify(new TextEncoder().encode(text), forged, identity), true);
      }
    });

    it('when prepare names any of the 14 small-order encodings as signerPublicKey (hex or base58), or a small-order wallet with no signerPublicKey, then it is 400', async () => {
      for (const key of SMALL_ORDER) {
        for (const encoded of [toHex(key), toBase58(key)]) {
          const res = await prepare(stack, newWallet(), { signerPublicKey: encoded });
          assert.equal(res.status, 400, `${encoded}: ${res.text}`);
          assert.match(res.body.error, /small-order/);
        }
        const wallet = toBase58(key);
        const asWallet = await request(stack.api.url, 'POST', `/api/v1/executions/${wallet}`, {
          token: stack.tokens.all,
          json: { intent: { a: 1 } },
        });
        assert.equal(asWallet.status, 400, `wallet ${wallet}: ${asWallet.text}`);
      }
    });

    it('when a submit for a real execution carries a small-order key and the forged signature, then it is 400 (not the signer key) and nothing is stored', async () => {
      const { wallet, executionId } = await prepared();
      const forged = new Uint8Array(64);
      forged[0] = 1;
      const body = {
        executionId,
        publicKey: toHex(SMALL_ORDER[2]),
        signature: toHex(forged),
        connectEnvelope: { address: wallet.id, domain: 'localhost', timestamp: nowSeconds() },
      };
      const res = await submit(stack, wallet.id, body);
      assert.equal(res.status, 400, res.text);
      assert.equal((await getExecution(stack, wallet.id, executionId)).body.result.signedPayload, undefined);
    });

    it('when prepare names 32 bytes that are no curve point (y = 2), then it is 400 instead of an execution no signature could ever complete', async () => {
      const offCurve = new Uint8Array(32);
      offCurve[0] = 2;
      assert.equal(isCurvePoint(offCurve), false);
      const res = await prepare(stack, newWallet(), { signerPublicKey: toHex(offCurve) });
      assert.equal(res.status, 400, res.text);
      assert.match(res.body.error, /not a point on the curve/);
      const asWallet = await request(stack.api.url, 'POST', `/api/v1/executions/${toBase58(offCurve)}`, {
        token: stack.tokens.all,
        json: { intent: { a: 1 } },
      });
      assert.equal(asWallet.status, 400);
    });

    it('when 32 random bytes are checked, then isCurvePoint agrees with an independent decoding, and every tweetnacl key is a point', () => {
      fc.assert(
        fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), (bytes) => isCurvePoint(bytes) === isCanonicalPointEncoding(bytes)),
        { numRuns: 500, seed: 6 },
      );
      for (let i = 0; i < 50; i++) assert.equal(isCurvePoint(nacl.sign.keyPair().publicKey), true);
      for (const key of SMALL_ORDER) assert.equal(isCurvePoint(key), isCanonicalPointEncoding(key));
    });
  });
});
