import assert from 'node:assert/strict';
import http from 'node:http';
import type { RunningApi } from '../../api/server';
import type { Config } from '../../config/config';
import { newWallet } from '../support/executions';
import { getStack, startStackApi, type Stack } from '../support/stack';

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

describe('rate limits: per client IP and wallet without a token, per token id with one (429 + Retry-After)', function () {
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
  async function apiWith(rateLimits: Config['rateLimits'], trustProxy: string[] = []): Promise<string> {
    const api = await startStackApi(stack, { config: { ...stack.config, rateLimits, trustProxy } });
    apis.push(api);
    return api.url;
  }

  it('when one IP floods a public route past its limit, then it gets 429 {error} with Retry-After while another IP is still served', async () => {
    const url = await apiWith({ windowS: 60, perIp: 10, perWallet: 0, perToken: 0 });
    const path = `/api/v1/executions/${newWallet().id}/missing`;
    const flood = await times(14, () => send(url, 'GET', path, { from: '127.0.0.1' }));
    assert.deepEqual(statuses(flood), [...Array(10).fill(404), ...Array(4).fill(429)]);
    const limited = flood[13];
    assert.deepEqual(Object.keys(limited.body), ['error']);
    assert.match(limited.body.error, /too many requests/);
    assert.ok(Number(limited.retryAfter) >= 1 && Number(limited.retryAfter) <= 60, `Retry-After ${limited.retryAfter}`);
    // Submit counts against the same address.
    assert.equal((await send(url, 'POST', `/api/v1/executions/${newWallet().id}/submit`, { from: '127.0.0.1', json: {} })).status, 429);
    const other = await send(url, 'GET', path, { from: '127.0.0.2' });
    assert.equal(other.status, 404, 'another client address is served');
  });

  it('when TRUST_PROXY is not set, then a spoofed X-Forwarded-For changes nothing: the socket address is the key', async () => {
    const url = await apiWith({ windowS: 60, perIp: 5, perWallet: 0, perToken: 0 });
    const path = `/api/v1/executions/${newWallet().id}/missing`;
    const answers = await times(8, (i) =>
      send(url, 'GET', path, { from: '127.0.0.3', headers: { 'x-forwarded-for': `203.0.113.${i + 1}` } }),
    );
    assert.deepEqual(statuses(answers), [404, 404, 404, 404, 404, 429, 429, 429]);
  });

  it('when TRUST_PROXY names the proxy, then the client address comes from its X-Forwarded-For, so one client is limited and another is served', async () => {
    const url = await apiWith({ windowS: 60, perIp: 3, perWallet: 0, perToken: 0 }, ['loopback']);
    const path = `/api/v1/executions/${newWallet().id}/missing`;
    const one = await times(5, () => send(url, 'GET', path, { from: '127.0.0.4', headers: { 'x-forwarded-for': '198.51.100.7' } }));
    assert.deepEqual(statuses(one), [404, 404, 404, 429, 429]);
    const another = await send(url, 'GET', path, { from: '127.0.0.4', headers: { 'x-forwarded-for': '198.51.100.8' } });
    assert.equal(another.status, 404);
  });

  it('when one wallet is hammered, then that wallet gets 429 while another wallet from the same address is served', async () => {
    const url = await apiWith({ windowS: 60, perIp: 0, perWallet: 4, perToken: 0 });
    const hot = newWallet().id;
    const answers = await times(6, () => send(url, 'GET', `/api/v1/executions/${hot}/missing`));
    assert.deepEqual(statuses(answers), [404, 404, 404, 404, 429, 429]);
    assert.equal(
      (await send(url, 'POST', `/api/v1/executions/${hot}/submit`, { json: {} })).status,
      429,
      'submit shares the wallet budget',
    );
    assert.equal((await send(url, 'GET', `/api/v1/executions/${newWallet().id}/missing`)).status, 404);
  });

  it('when a token sends past its limit, then it gets 429 with Retry-After on execution and whitelist routes, and another token is served', async () => {
    const url = await apiWith({ windowS: 60, perIp: 0, perWallet: 0, perToken: 3 });
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
});
