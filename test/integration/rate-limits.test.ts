import assert from 'node:assert/strict';
import http from 'node:http';
import type { RunningApi } from '../../api/server';
import type { Config } from '../../config/config';
import { IntentClient } from '@intent-service/client';
import { cancelBody, newWallet, prepare, sampleIntent, signedBody } from '../support/executions';
import { request } from '../support/http';
import { startThrowawayPostgres, postgresBinDir, type ThrowawayPostgres } from '../support/postgres';
import { getStack, startStackApi, type Stack } from '../support/stack';

/** A browser page's origin that CORS_ORIGINS allows. */
const ORIGIN = 'https://wallet.example';

interface Answer {
  status: number;
  retryAfter?: string;
  body: any;
}

/** One request over real HTTP from a chosen local address (127.0.0.0/8 is all loopback on Linux). */
function send(
  url: string,
  method: string,
  path: string,
  options: { from?: string; headers?: Record<string, string>; json?: unknown } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const body = options.json === undefined ? undefined : JSON.stringify(options.json);
    const req = http.request(
      `${url}${path}`,
      {
        method,
        localAddress: options.from ?? '127.0.0.1',
        headers: { ...(body ? { 'content-type': 'application/json' } : {}), ...options.headers },
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'], body: text ? JSON.parse(text) : undefined });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function times(n: number, fn: (i: number) => Promise<Answer>): Promise<Answer[]> {
  const out: Answer[] = [];
  for (let i = 0; i < n; i++) out.push(await fn(i));
  return out;
}

const statuses = (answers: Answer[]) => answers.map((a) => a.status);

describe('rate limits: per client without a token, per wallet once its signature verified, per token id, per client on failed authentications (429 + Retry-After); the RateLimit fields (draft-ietf-httpapi-ratelimit-headers-11) and the SDK pacing itself by them', function () {
  this.timeout(60_000);
  let stack: Stack;
  const apis: RunningApi[] = [];
  before(async () => {
    stack = await getStack();
  });
  after(async () => {
    await Promise.all(apis.map((a) => a.close(1000)));
  });

  /** An API process of its own with these limits (the shared stack runs without limits). */
  async function apiWith(
    limits: Partial<Config['rateLimits']>,
    trustProxy: string[] = [],
    database: Config['database'] = stack.config.database,
    corsOrigins: string[] = [],
  ): Promise<string> {
    const rateLimits = { windowS: 60, perIp: 0, perWallet: 0, perToken: 0, authFailuresPerIp: 0, ...limits };
    const api = await startStackApi(stack, { config: { ...stack.config, rateLimits, trustProxy, database, corsOrigins } });
    apis.push(api);
    return api.url;
  }

  it('when one IP floods a public route past its limit, then it gets 429 {error} with Retry-After while another IP is still served', async () => {
    const url = await apiWith({ perIp: 10 });
    const path = `/api/v1/executions/${newWallet().id}/missing`;
    const flood = await times(14, () => send(url, 'GET', path, { from: '127.0.0.1' }));
    assert.deepEqual(statuses(flood), [...Array(10).fill(404), ...Array(4).fill(429)]);
    const limited = flood[13];
    assert.deepEqual(Object.keys(limited.body), ['error', 'code']);
    assert.match(limited.body.error, /too many requests/);
    assert.ok(Number(limited.retryAfter) >= 1 && Number(limited.retryAfter) <= 60, `Retry-After ${limited.retryAfter}`);
    // Submit counts against the same address.
    assert.equal((await send(url, 'POST', `/api/v1/executions/${newWallet().id}/submit`, { from: '127.0.0.1', json: {} })).status, 429);
    const other = await send(url, 'GET', path, { from: '127.0.0.2' });
    assert.equal(other.status, 404, 'another client address is served');
  });

  it("when one IP floods the deposit lookup past its limit, then it gets 429 {error} with Retry-After: the lookup and an execution's GET share the client's one budget", async () => {
    const url = await apiWith({ perIp: 6 });
    const lookup = `/api/v1/deposits/evm:31337/0x${'cd'.repeat(32)}`;
    const flood = await times(8, (i) =>
      send(url, 'GET', i % 2 === 0 ? lookup : `/api/v1/executions/${newWallet().id}/missing`, { from: '127.0.0.31' }),
    );
    assert.deepEqual(statuses(flood), [...Array(6).fill(404), 429, 429]);
    assert.deepEqual(Object.keys(flood[6].body), ['error', 'code']);
    assert.match(flood[6].body.error, /too many requests/);
    assert.ok(Number(flood[6].retryAfter) >= 1, `Retry-After ${flood[6].retryAfter}`);
    assert.equal((await send(url, 'GET', lookup, { from: '127.0.0.32' })).status, 404, 'another client address is served');
  });

  it('when TRUST_PROXY is not set, then a spoofed X-Forwarded-For changes nothing: the socket address is the key', async () => {
    const url = await apiWith({ perIp: 5 });
    const path = `/api/v1/executions/${newWallet().id}/missing`;
    const answers = await times(8, (i) =>
      send(url, 'GET', path, { from: '127.0.0.3', headers: { 'x-forwarded-for': `203.0.113.${i + 1}` } }),
    );
    assert.deepEqual(statuses(answers), [404, 404, 404, 404, 404, 429, 429, 429]);
  });

  it('when TRUST_PROXY names the proxy, then the client address comes from its X-Forwarded-For, so one client is limited and another is served', async () => {
    const url = await apiWith({ perIp: 3 }, ['loopback']);
    const path = `/api/v1/executions/${newWallet().id}/missing`;
    const one = await times(5, () => send(url, 'GET', path, { from: '127.0.0.4', headers: { 'x-forwarded-for': '198.51.100.7' } }));
    assert.deepEqual(statuses(one), [404, 404, 404, 429, 429]);
    const another = await send(url, 'GET', path, { from: '127.0.0.4', headers: { 'x-forwarded-for': '198.51.100.8' } });
    assert.equal(another.status, 404);
  });

  it("when an attacker reads a victim's execution at full rate from several addresses, then each address is limited on its own, and the owner's signed submit still succeeds", async () => {
    const url = await apiWith({ perIp: 5, perWallet: 3 });
    const victim = newWallet();
    const executionId = `victim-${Date.now()}`;
    const intent = sampleIntent();
    assert.equal((await prepare(stack, victim, { executionId, intent })).status, 201);
    const path = `/api/v1/executions/${victim.id}/${executionId}`;
    for (const from of ['127.0.0.21', '127.0.0.22', '127.0.0.23']) {
      const flood = await times(8, () => send(url, 'GET', path, { from }));
      assert.deepEqual(statuses(flood), [...Array(5).fill(200), ...Array(3).fill(429)], from);
      // A submit signed by anyone but the owner is no signed action of the wallet's own.
      const forged = await send(url, 'POST', `/api/v1/executions/${victim.id}/submit`, {
        from: '127.0.0.24',
        json: signedBody(victim, executionId, { forged: true }),
      });
      assert.equal(forged.status, 400, JSON.stringify(forged.body));
    }
    const own = await send(url, 'POST', `/api/v1/executions/${victim.id}/submit`, {
      from: '127.0.0.25',
      json: signedBody(victim, executionId, intent),
    });
    assert.equal(own.status, 200, JSON.stringify(own.body));
    assert.equal(own.body.result.status, 'PREPARED');
  });

  it("when a wallet's own signed actions that change something pass its limit, then the next gets 429, counted only once verified", async () => {
    const url = await apiWith({ perWallet: 2 });
    const owner = newWallet();
    const intent = sampleIntent();
    const ids = [1, 2, 3].map((i) => `own-${i}-${Date.now()}`);
    for (const executionId of ids) assert.equal((await prepare(stack, owner, { executionId, intent })).status, 201);
    const answers = await times(3, (i) =>
      send(url, 'POST', `/api/v1/executions/${owner.id}/submit`, { json: signedBody(owner, ids[i], intent) }),
    );
    assert.deepEqual(statuses(answers), [200, 200, 429]);
    assert.ok(Number(answers[2].retryAfter) >= 1);
  });

  it("when anyone replays a wallet's stored signature (from a public GET) and its applied cancel, from many addresses at once, then the owner's budget is untouched: its next submit and cancel succeed", async () => {
    const url = await apiWith({ perIp: 10, perWallet: 4 });
    const owner = newWallet();
    const intent = sampleIntent();
    const [signed, other, last, over] = ['signed', 'other', 'last', 'over'].map((name) => `replayed-${name}-${Date.now()}`);
    for (const executionId of [signed, other, last, over]) assert.equal((await prepare(stack, owner, { executionId, intent })).status, 201);
    const submitPath = `/api/v1/executions/${owner.id}/submit`;
    assert.equal((await send(url, 'POST', submitPath, { json: signedBody(owner, signed, intent) })).status, 200, 'owner action 1');

    // What anybody can read: the stored payload, replayed as a submit body.
    const read = await send(url, 'GET', `/api/v1/executions/${owner.id}/${signed}`, { from: '127.0.0.50' });
    const { signature, publicKey, connectEnvelope } = read.body.result.signedPayload;
    const replay = { executionId: signed, signature, publicKey, connectEnvelope };
    // Each replaying address spends its own budget (10 requests), and only its own.
    const addresses = (block: number) => Array.from({ length: 15 }, (_, i) => `127.0.${block}.${i + 1}`);
    // Ten at once from each address: the replays race each other and the read model's write.
    const replays = (
      await Promise.all(
        addresses(1).map((from) => Promise.all(Array.from({ length: 10 }, () => send(url, 'POST', submitPath, { from, json: replay })))),
      )
    ).flat();
    assert.deepEqual([...new Set(statuses(replays))], [200], 'a replay of the stored signature answers its status');

    assert.equal((await send(url, 'POST', submitPath, { json: signedBody(owner, other, intent) })).status, 200, 'owner action 2');
    const cancel = cancelBody(owner, other);
    const cancelPath = `/api/v1/executions/${owner.id}/${other}/cancel`;
    assert.equal((await send(url, 'POST', cancelPath, { json: cancel })).status, 200, 'owner action 3');
    const cancelReplays = (
      await Promise.all(
        addresses(2).map((from) => Promise.all(Array.from({ length: 10 }, () => send(url, 'POST', cancelPath, { from, json: cancel })))),
      )
    ).flat();
    assert.deepEqual([...new Set(statuses(cancelReplays))], [200], 'a replayed cancel answers the CANCELLED record');
    // Replaying the stored submit of a cancelled execution is refused, and free for the owner too.
    const toCancelled = (
      await Promise.all(
        addresses(3)
          .slice(0, 5)
          .map((from) => send(url, 'POST', submitPath, { from, json: { ...signedBody(owner, other, intent), executionId: other } })),
      )
    ).map((a) => a.status);
    assert.deepEqual([...new Set(toCancelled)], [409]);

    assert.equal((await send(url, 'POST', submitPath, { json: signedBody(owner, last, intent) })).status, 200, 'owner action 4');
    const fifth = await send(url, 'POST', submitPath, { json: signedBody(owner, over, intent) });
    assert.equal(fifth.status, 429, 'the budget still holds for actions that change something');
  });

  it('when a client keeps failing to authenticate (bad tokens, forged signatures), then it gets 429 on its next attempts, and another client is served', async () => {
    const url = await apiWith({ authFailuresPerIp: 3 });
    const from = '127.0.0.31';
    const bad = await times(3, () =>
      send(url, 'POST', `/api/v1/executions/${newWallet().id}`, { from, headers: { authorization: 'Bearer nope' }, json: {} }),
    );
    assert.deepEqual(statuses(bad), [401, 401, 401]);
    const next = await send(url, 'POST', '/chain/whitelists/', {
      from,
      headers: { authorization: `Bearer ${stack.tokens.all}` },
      json: [],
    });
    assert.equal(next.status, 429, 'even a good token from that client waits out the window');
    assert.equal(
      (
        await send(url, 'POST', `/api/v1/executions/${newWallet().id}`, {
          from: '127.0.0.32',
          headers: { authorization: 'Bearer nope' },
          json: {},
        })
      ).status,
      401,
    );
    // A signature that does not verify is a failed authentication too.
    const owner = newWallet();
    const executionId = `forged-${Date.now()}`;
    const intent = sampleIntent();
    assert.equal((await prepare(stack, owner, { executionId, intent })).status, 201);
    const forged = () =>
      send(url, 'POST', `/api/v1/executions/${owner.id}/submit`, {
        from: '127.0.0.33',
        json: signedBody(owner, executionId, { other: 'intent' }),
      });
    assert.deepEqual(statuses(await times(4, forged)), [400, 400, 400, 429]);
  });

  it('when one client sends 30 forged submits at once, then no more than its failed-authentication limit reach the signature check; the rest get 429', async () => {
    const url = await apiWith({ authFailuresPerIp: 5 });
    const owner = newWallet();
    const executionId = `burst-${Date.now()}`;
    assert.equal((await prepare(stack, owner, { executionId, intent: sampleIntent() })).status, 201);
    const forged = signedBody(owner, executionId, { other: 'intent' });
    const answers = await Promise.all(
      Array.from({ length: 30 }, () => send(url, 'POST', `/api/v1/executions/${owner.id}/submit`, { from: '127.0.0.35', json: forged })),
    );
    const checked = answers.filter((a) => a.status === 400);
    assert.ok(checked.length <= 5, `${checked.length} forged signatures reached the check: ${statuses(answers).join(' ')}`);
    assert.ok(
      checked.every((a) => /signature does not verify/.test(a.body.error)),
      JSON.stringify(checked[0]?.body),
    );
    assert.equal(answers.filter((a) => a.status === 429).length, 30 - checked.length);
  });

  it('when one client sends 30 bad tokens at once, then no more than its failed-authentication limit are checked (401); the rest get 429', async () => {
    const url = await apiWith({ authFailuresPerIp: 5 });
    const answers = await Promise.all(
      Array.from({ length: 30 }, () =>
        send(url, 'POST', `/api/v1/executions/${newWallet().id}`, {
          from: '127.0.0.36',
          headers: { authorization: 'Bearer nope' },
          json: {},
        }),
      ),
    );
    assert.ok(answers.filter((a) => a.status === 401).length <= 5, statuses(answers).join(' '));
    assert.equal(answers.filter((a) => a.status === 401 || a.status === 429).length, 30);
  });

  it('when a client with a good token sends 30 requests at once, then none is refused by the failed-authentication limit', async () => {
    const url = await apiWith({ authFailuresPerIp: 5 });
    // An empty batch: authenticated, then refused 400 by validation, which is no failed authentication.
    const answers = await Promise.all(
      Array.from({ length: 30 }, () =>
        send(url, 'POST', '/chain/whitelists/', { from: '127.0.0.37', headers: { authorization: `Bearer ${stack.tokens.all}` }, json: [] }),
      ),
    );
    assert.deepEqual(new Set(statuses(answers)), new Set([400]), statuses(answers).join(' '));
    const after = await send(url, 'POST', '/chain/whitelists/', {
      from: '127.0.0.37',
      headers: { authorization: 'Bearer nope' },
      json: [],
    });
    assert.equal(after.status, 401, 'the good requests gave their points back');
  });

  it('when two APIs share the PostgreSQL read model, then together they admit one limit, not two', async function () {
    if (!postgresBinDir()) {
      console.log('    PostgreSQL server binaries are not installed (pg_config --bindir): the shared-limit test is skipped');
      this.skip();
    }
    const pg: ThrowawayPostgres = await startThrowawayPostgres('limits');
    try {
      const database = { ...stack.config.database, url: pg.url };
      const [a, b] = [await apiWith({ perIp: 6 }, [], database), await apiWith({ perIp: 6 }, [], database)];
      const path = `/api/v1/executions/${newWallet().id}/missing`;
      const answers = await times(10, (i) => send(i % 2 ? b : a, 'GET', path, { from: '127.0.0.41' }));
      assert.deepEqual(statuses(answers), [...Array(6).fill(404), ...Array(4).fill(429)]);
    } finally {
      await Promise.all(apis.splice(-2).map((api) => api.close(1000)));
      await pg.stop();
    }
  });

  it('when a token sends past its limit, then it gets 429 with Retry-After on execution and whitelist routes, and another token is served', async () => {
    const url = await apiWith({ perToken: 3 });
    const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
    // Off-schema bodies: each is a cheap 400 after the token was counted.
    const answers = await times(3, () =>
      send(url, 'POST', `/api/v1/executions/${newWallet().id}`, { headers: bearer(stack.tokens.all), json: {} }),
    );
    assert.deepEqual(statuses(answers), [400, 400, 400]);
    const limited = await send(url, 'POST', '/chain/whitelists/', { headers: bearer(stack.tokens.all), json: [] });
    assert.equal(limited.status, 429);
    assert.equal(limited.body.error, 'Too Many Requests', 'whitelist routes keep their error style');
    assert.equal(typeof limited.body.errorMessage, 'string');
    assert.ok(Number(limited.retryAfter) >= 1);
    assert.equal(
      (await send(url, 'POST', `/api/v1/executions/${newWallet().id}`, { headers: bearer(stack.tokens.prepare), json: {} })).status,
      400,
    );
    // An unknown token is still 401 (it has no id to count).
    assert.equal((await send(url, 'POST', `/api/v1/executions/${newWallet().id}`, { headers: bearer('nope'), json: {} })).status, 401);
  });

  it('when a client reads a public route, then each answer tells the policy and what is left; past it, a 429 with Retry-After and r=0; a lookup costs one per item', async () => {
    const url = await apiWith({ perIp: 6 }, [], stack.config.database, [ORIGIN]);
    const wallet = newWallet();
    const executionId = `limits-${Date.now()}`;
    assert.equal((await prepare(stack, wallet, { executionId })).status, 201);
    const path = `/api/v1/executions/${wallet.id}/${executionId}`;
    const first = await request(url, 'GET', path, { headers: { origin: ORIGIN } });
    assert.equal(first.status, 200, first.text);
    assert.equal(first.headers.get('ratelimit-policy'), '"client";q=6;w=60');
    assert.match(first.headers.get('ratelimit')!, /^"client";r=5;t=(60|59)$/);
    const exposed = first.headers
      .get('access-control-expose-headers')!
      .split(',')
      .map((h) => h.trim().toLowerCase());
    assert.ok(exposed.includes('ratelimit') && exposed.includes('ratelimit-policy') && exposed.includes('retry-after'), exposed.join());

    const lookup = await request(url, 'POST', '/api/v1/executions/lookup', {
      json: { executions: [0, 1, 2].map(() => ({ wallet: wallet.id, executionId })) },
    });
    assert.equal(lookup.status, 200, lookup.text);
    assert.match(lookup.headers.get('ratelimit')!, /^"client";r=2;t=\d+$/, 'three items: three reads');
    assert.match((await request(url, 'GET', path)).headers.get('ratelimit')!, /^"client";r=1;/);
    assert.match((await request(url, 'GET', path)).headers.get('ratelimit')!, /^"client";r=0;/);

    const refused = await request(url, 'GET', path, { headers: { origin: ORIGIN } });
    assert.equal(refused.status, 429, refused.text);
    assert.equal(refused.body.code, 'RATE_LIMITED');
    const retryAfter = Number(refused.headers.get('retry-after'));
    assert.ok(retryAfter >= 1 && retryAfter <= 60, String(retryAfter));
    assert.equal(refused.headers.get('ratelimit-policy'), '"client";q=6;w=60');
    assert.equal(refused.headers.get('ratelimit'), `"client";r=0;t=${retryAfter}`);
    assert.equal(refused.headers.get('access-control-allow-origin'), ORIGIN, 'the 429 is readable by the page too');
    assert.equal(
      (await request(url, 'GET', `/status/${wallet.id}/${executionId}`)).headers.get('ratelimit'),
      `"client";r=0;t=${retryAfter}`,
    );
  });

  it('when the SDK is told nothing is left (r=0), then its next call waits for the reset instead of taking a 429; a client that takes a 429 retries after Retry-After', async () => {
    // Two a window: the other client's retry takes one of the next window, the paced call the other.
    const url = await apiWith({ perIp: 2, windowS: 3 });
    const wallet = newWallet();
    const executionId = `limits-sdk-${Date.now()}`;
    assert.equal((await prepare(stack, wallet, { executionId })).status, 201);
    const seen =
      (statuses: number[], limits: string[]): typeof fetch =>
      async (input, init) => {
        const res = await fetch(input, init);
        statuses.push(res.status);
        limits.push(res.headers.get('ratelimit') ?? '');
        return res;
      };
    const aStatuses: number[] = [];
    const aLimits: string[] = [];
    const bStatuses: number[] = [];
    const a = new IntentClient({ baseUrl: url, fetch: seen(aStatuses, aLimits) });
    const b = new IntentClient({ baseUrl: url, fetch: seen(bStatuses, []) });

    await a.get(wallet.id, executionId);
    await a.get(wallet.id, executionId);
    const told = /^"client";r=0;t=(\d+)$/.exec(aLimits[1]!);
    assert.ok(told, String(aLimits[1]));
    const resetMs = Number(told[1]) * 1000;
    const start = Date.now();

    // Another client of the same address, which has heard nothing yet: 429, then its retry after Retry-After.
    assert.equal((await b.get(wallet.id, executionId)).executionId, executionId);
    assert.deepEqual(bStatuses, [429, 200]);

    await a.get(wallet.id, executionId);
    assert.ok(Date.now() - start >= resetMs - 100, `the second call left ${Date.now() - start} ms after being told to wait ${resetMs} ms`);
    assert.ok(!aStatuses.includes(429), `a paced client took no 429: ${aStatuses.join()}`);
  });
});
