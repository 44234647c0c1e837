import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  AUTH_HEADERS,
  generateNodeKey,
  parseNodeKeys,
  ReplayCache,
  RequestVerifier,
  signRequest,
  type NodeKeys,
  type ReceivedRequest,
  type SignedParts,
} from '../../lib/node-request-auth';

const keysOf = (...lines: string[]): NodeKeys => parseNodeKeys(lines.join('\n'));
const OLD = generateNodeKey();
const NEW = generateNodeKey();
const T0 = Date.parse('2026-12-01T12:00:00Z');

/** The node the verifier is, and the one a request signed for elsewhere is for. */
const THIS_NODE = '127.0.0.1:7001';
const OTHER_NODE = '127.0.0.1:7002';

const apply: SignedParts = {
  method: 'POST',
  node: THIS_NODE,
  target: '/v1/whitelists/apply',
  body: JSON.stringify({
    batchId: 'b1',
    changes: [{ op_type: 'add_entry', kind: 'user', entry: '0x52908400098527886E0F7030069857D2E4169EE7' }],
  }),
};

/** A verifier whose clock is `now` (ms), so that timestamps can be moved. */
function verifier(keys: NodeKeys, options: { maxRememberedIds?: number } = {}) {
  const clock = { now: T0 };
  return { clock, verifier: new RequestVerifier(keys, { nodes: () => [THIS_NODE], toleranceS: 300, now: () => clock.now, ...options }) };
}

const received = (parts: SignedParts, headers: Record<string, string>): ReceivedRequest => ({ ...parts, headers });
const signed = (keys: NodeKeys, parts: SignedParts = apply, nowMs = T0) => received(parts, signRequest(keys, parts, { nowMs }));

describe('storage node request auth (HMAC over method, node, target, timestamp, id and body digest)', () => {
  describe('keys file text', () => {
    it('when keys are listed with blank lines and comments, then each is read in order', () => {
      const keys = keysOf('# rotated 2026-12', OLD, '', `  ${NEW}  `);
      assert.equal(keys.length, 2);
      assert.deepEqual(keys[0], Buffer.from(OLD.slice('whsec_'.length), 'base64'));
    });

    it('when a line is not whsec_ + base64 of 32 bytes or more, or a key repeats, then parsing throws without echoing it', () => {
      for (const text of [
        '',
        '# only a comment',
        'secret',
        'whsec_',
        'whsec_!!!!',
        `whsec_${Buffer.alloc(16).toString('base64')}`,
        `${OLD}\n${OLD}`,
      ]) {
        assert.throws(
          () => parseNodeKeys(text, 'keys'),
          (err: Error) => err.message.startsWith('keys') && !err.message.includes(OLD.slice(6)),
          JSON.stringify(text),
        );
      }
    });
  });

  describe('verification', () => {
    it('when a request is signed with the key, then it verifies', () => {
      const { verifier: v } = verifier(keysOf(OLD));
      assert.deepEqual(v.verify(signed(keysOf(OLD))), { ok: true });
    });

    it('when a request is unsigned or a header is missing or malformed, then it is 401', () => {
      const { verifier: v } = verifier(keysOf(OLD));
      const good = signRequest(keysOf(OLD), apply, { nowMs: T0 });
      const variants: Record<string, string>[] = [
        {},
        { ...good, [AUTH_HEADERS.signature]: '' },
        Object.fromEntries(Object.entries(good).filter(([name]) => name !== AUTH_HEADERS.id)),
        Object.fromEntries(Object.entries(good).filter(([name]) => name !== AUTH_HEADERS.timestamp)),
        { ...good, [AUTH_HEADERS.id]: 'short' },
        { ...good, [AUTH_HEADERS.timestamp]: `${good[AUTH_HEADERS.timestamp]}.5` },
        { ...good, [AUTH_HEADERS.signature]: good[AUTH_HEADERS.signature].replace('v2,', 'v1,') },
        Object.fromEntries(Object.entries(good).filter(([name]) => name !== AUTH_HEADERS.node)),
        { ...good, [AUTH_HEADERS.node]: 'Node A' },
      ];
      for (const headers of variants) {
        const outcome = v.verify(received(apply, headers));
        assert.equal(outcome.ok, false, JSON.stringify(headers));
        assert.equal(!outcome.ok && outcome.status, 401);
      }
    });

    it('when a request is signed with another key, then it is 401', () => {
      const { verifier: v } = verifier(keysOf(OLD));
      const outcome = v.verify(signed(keysOf(NEW)));
      assert.deepEqual(outcome, { ok: false, status: 401, reason: 'the signature does not verify with any key' });
    });

    it('when the timestamp is older than the tolerance, then it is 401; at the tolerance it still verifies', () => {
      const { verifier: v } = verifier(keysOf(OLD));
      const stale = v.verify(signed(keysOf(OLD), apply, T0 - 301_000));
      assert.ok(!stale.ok && stale.status === 401 && /old/.test(stale.reason));
      assert.deepEqual(v.verify(signed(keysOf(OLD), apply, T0 - 300_000)), { ok: true });
    });

    it('when the timestamp is further ahead than the tolerance, then it is 401', () => {
      const { verifier: v } = verifier(keysOf(OLD));
      const future = v.verify(signed(keysOf(OLD), apply, T0 + 302_000));
      assert.ok(!future.ok && future.status === 401 && /ahead/.test(future.reason));
      assert.deepEqual(v.verify(signed(keysOf(OLD), apply, T0 + 299_000)), { ok: true });
    });

    it('when a signed request is sent again within the tolerance, then the copy is 401 (replayed)', () => {
      const { clock, verifier: v } = verifier(keysOf(OLD));
      const request = signed(keysOf(OLD));
      assert.deepEqual(v.verify(request), { ok: true });
      clock.now += 200_000;
      const replay = v.verify(request);
      assert.ok(!replay.ok && replay.status === 401 && /replayed/.test(replay.reason));
      clock.now += 101_000;
      const late = v.verify(request);
      assert.ok(!late.ok && /old/.test(late.reason), 'once out of the window its timestamp refuses it');
    });

    it('when the body, method or path (or its query) was changed after signing, then it is 401', () => {
      const { verifier: v } = verifier(keysOf(OLD));
      const headers = signRequest(keysOf(OLD), apply, { nowMs: T0 });
      const body = (apply.body as string).replace('add_entry', 'remove_entry');
      for (const parts of [
        { ...apply, body },
        { ...apply, body: `${apply.body as string} ` },
        { ...apply, method: 'PUT' },
        { ...apply, target: '/v1/faults' },
        { ...apply, target: '/v1/whitelists/apply?x=1' },
      ]) {
        const outcome = v.verify(received(parts, headers));
        assert.deepEqual(outcome, { ok: false, status: 401, reason: 'the signature does not verify with any key' }, JSON.stringify(parts));
      }
      const list = { method: 'GET', node: THIS_NODE, target: '/v1/whitelists/user?limit=2', body: '' };
      const listHeaders = signRequest(keysOf(OLD), list, { nowMs: T0 });
      assert.deepEqual(v.verify(received({ ...list, target: '/v1/whitelists/user?limit=3' }, listHeaders)).ok, false);
      assert.deepEqual(v.verify(received(list, listHeaders)), { ok: true });
    });

    it('when a request was signed for another node, then it is 401 here, whether or not its node header was changed to this one', () => {
      const { verifier: v } = verifier(keysOf(OLD));
      const elsewhere = signed(keysOf(OLD), { ...apply, node: OTHER_NODE });
      const refused = v.verify(elsewhere);
      assert.ok(!refused.ok && refused.status === 401 && /signed for node 127\.0\.0\.1:7002/.test(refused.reason), JSON.stringify(refused));
      const relabelled = received(apply, { ...elsewhere.headers, [AUTH_HEADERS.node]: THIS_NODE } as Record<string, string>);
      assert.deepEqual(v.verify(relabelled), { ok: false, status: 401, reason: 'the signature does not verify with any key' });
      assert.deepEqual(
        v.checkHeaders(signed(keysOf(OLD)).headers),
        { ok: true },
        'signed for this node: the headers pass before the body is read',
      );
    });

    it('when keys are rotated, then a node holding old and new verifies both, and only the first key signs', () => {
      const { verifier: v } = verifier(keysOf(NEW, OLD));
      assert.deepEqual(v.verify(signed(keysOf(OLD))), { ok: true }, 'a client still on the old key');
      assert.deepEqual(v.verify(signed(keysOf(NEW))), { ok: true }, 'a client already on the new key');
      // A client holding both signs with its first line only: a node that has only that key accepts it, one with only the other refuses.
      const both = signed(keysOf(NEW, OLD));
      assert.deepEqual(verifier(keysOf(NEW)).verifier.verify(both), { ok: true });
      assert.equal(verifier(keysOf(OLD)).verifier.verify(signed(keysOf(NEW, OLD))).ok, false);
    });

    it('when the replay memory is full of live ids, then a new request is 503 and nothing grows; once they expire it is accepted', () => {
      const { clock, verifier: v } = verifier(keysOf(OLD), { maxRememberedIds: 2 });
      assert.deepEqual(v.verify(signed(keysOf(OLD))), { ok: true });
      assert.deepEqual(v.verify(signed(keysOf(OLD))), { ok: true });
      const full = v.verify(signed(keysOf(OLD)));
      assert.ok(!full.ok && full.status === 503, JSON.stringify(full));
      clock.now += 301_000;
      assert.deepEqual(v.verify(signed(keysOf(OLD), apply, clock.now)), { ok: true });
    });

    it('when an unsigned request comes, then its id is not remembered (nobody without a key can fill the memory)', () => {
      const { verifier: v } = verifier(keysOf(OLD), { maxRememberedIds: 1 });
      for (let i = 0; i < 5; i++) assert.equal(v.verify(signed(keysOf(NEW))).ok, false);
      assert.deepEqual(v.verify(signed(keysOf(OLD))), { ok: true });
    });
  });

  describe('replay memory', () => {
    it('when ids expire out of order, then a full memory sweeps the expired ones before refusing', () => {
      const cache = new ReplayCache(2);
      assert.equal(cache.remember('a', 10_000, 0), 'new');
      assert.equal(cache.remember('b', 1_000, 0), 'new');
      assert.equal(cache.remember('a', 10_000, 500), 'seen');
      // 'b' expired behind the live 'a': found by the sweep.
      assert.equal(cache.remember('c', 10_000, 2_000), 'new');
      assert.equal(cache.size, 2);
      assert.equal(cache.remember('d', 10_000, 2_500), 'full');
      assert.equal(cache.size, 2);
    });
  });

  describe('the accepted window and the remembered window', () => {
    it('when a copy comes at the very millisecond its timestamp reaches the tolerance, then it is refused', () => {
      const { clock, verifier: v } = verifier(keysOf(OLD));
      const request = signed(keysOf(OLD));
      assert.deepEqual(v.verify(request), { ok: true });
      for (const offset of [299_999, 300_000, 300_001]) {
        clock.now = T0 + offset;
        assert.equal(v.verify(request).ok, false, `a copy ${offset} ms later`);
      }
    });

    // docs/backup.md (a node restored from a copy waits 600 s) and docs/production.md (ids kept up to 2 × 300 s).
    it('when a request is stamped 300 s ahead, then a node that forgot its id (a restored copy) would take it again until 600 s after it came', () => {
      const request = signed(keysOf(OLD), apply, T0 + 299_000);
      const first = verifier(keysOf(OLD));
      assert.deepEqual(first.verifier.verify(request), { ok: true });
      const restored = verifier(keysOf(OLD)); // no memory of the id
      restored.clock.now = T0 + 598_000;
      assert.deepEqual(restored.verifier.verify(request), { ok: true });
      first.clock.now = T0 + 598_000;
      assert.equal(first.verifier.verify(request).ok, false, 'the node that remembers refuses the copy');
      const late = verifier(keysOf(OLD));
      late.clock.now = T0 + 600_000;
      assert.equal(late.verifier.verify(request).ok, false, 'stale by its timestamp alone');
    });

    it('when one signed request is verified at any instants, then it is accepted at most once', () => {
      fc.assert(
        fc.property(
          fc.integer({ min: -400_000, max: 400_000 }),
          // Whole seconds, so that the clock lands on the edges of the window, not just near them.
          fc.array(
            fc.integer({ min: 0, max: 700 }).map((s) => s * 1000),
            { minLength: 1, maxLength: 6 },
          ),
          (signedAt, steps) => {
            const { clock, verifier: v } = verifier(keysOf(OLD));
            const request = signed(keysOf(OLD), apply, T0 + signedAt);
            clock.now = T0 - 300_000;
            let accepted = 0;
            for (const step of steps) {
              clock.now += step;
              if (v.verify(request).ok) accepted++;
            }
            assert.ok(accepted <= 1, `accepted ${accepted} times`);
          },
        ),
        { numRuns: 2000 },
      );
    });
  });
});
