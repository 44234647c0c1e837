import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { intentHash } from '../../domain/canonical';
import { toHex } from '../../domain/encoding';
import { getStack, type Stack } from '../support/stack';
import { depositHttp, getExecution, newWallet, prepare, sampleIntent, signedBody, submit, type TestWallet } from '../support/executions';
import { nodeEntries } from '../support/whitelists';
import {
  CONTENT_TYPES,
  HOSTILE_QUERY,
  PROTO_KEYS,
  Raw,
  deepText,
  hostileSegment,
  hostileValue,
  mutatedObject,
  nonUtf8,
  objectText,
  withRawNul,
  type Entries,
  type Segment,
} from './arbitraries';
import { jsonOf, rawRequest, type RawAnswer, type RawRequest } from './raw-http';
import { Tally, assertDocumented, type Expectation } from './tally';
import { testSettings } from '../support/settings';

// Control characters, which an HTTP parser refuses in a header value (tab aside): matched on purpose.
// eslint-disable-next-line no-control-regex
const CONTROL_CHARS_BUT_TAB = /[\x00-\x08\x0a-\x1f\x7f]/;
// eslint-disable-next-line no-control-regex
const CONTROL_CHARS = /[\x00-\x1f\x7f]/g;

// Generated hostile input at every route, over real HTTP (raw TCP, so that bytes fetch refuses get
// through), against the shared real stack. Bounded: about 2,000 requests, a fixed seed (HOSTILE_SEED
// overrides it; a failure prints the seed and the shrunk input).

const SEED = testSettings().HOSTILE_SEED ?? 20_260_806;
const RUNS = { bodies: 800, oversize: 24, headers: 400, timeout: 60, auth: 120, protoKeys: 150, paths: 500 };

/** Object.prototype and friends as they were before any hostile request. */
const pristine = {
  object: Object.getOwnPropertyNames(Object.prototype).sort().join(),
  array: Object.getOwnPropertyNames(Array.prototype).sort().join(),
  fn: Object.getOwnPropertyNames(Function.prototype).sort().join(),
};

function assertNotPolluted(): void {
  assert.equal(Object.getOwnPropertyNames(Object.prototype).sort().join(), pristine.object, 'Object.prototype gained or lost properties');
  assert.equal(Object.getOwnPropertyNames(Array.prototype).sort().join(), pristine.array, 'Array.prototype changed');
  assert.equal(Object.getOwnPropertyNames(Function.prototype).sort().join(), pristine.fn, 'Function.prototype changed');
  assert.equal(({} as any).polluted, undefined, 'a fresh object inherits "polluted"');
  assert.equal(Object.getPrototypeOf({}), Object.prototype);
}

const eoa = (bytes: Uint8Array) => '0x' + Buffer.from(bytes).toString('hex');

describe('hostile input: generated malformed bodies, headers and paths at every route (fast-check, raw HTTP)', function () {
  this.timeout(180_000);
  let stack: Stack;
  const tally = new Tally();
  let wallet: TestWallet;
  /** An execution that already holds signature `heldSignature` (submit fuzz), and one with a deposit (deposit fuzz). */
  let submitTarget: { executionId: string; body: ReturnType<typeof signedBody> };
  let depositTarget: { executionId: string };
  const DEPOSIT = { txHash: '0xhostile-deposit', chain: 'solana', amount: '15' };

  interface Route {
    name: string;
    method: string;
    path: () => string;
    token?: () => string;
    /** A valid body, as entries, for the mutation generator. */
    base: () => Entries;
    expect: Expectation;
  }
  let routes: Route[];

  before(async () => {
    stack = await getStack();
    wallet = newWallet();
    const intent = sampleIntent();
    const s = await prepare(stack, wallet, { executionId: `hs-${randomUUID()}`, intent });
    assert.equal(s.status, 201, s.text);
    const body = signedBody(wallet, s.body.result.executionId, intent);
    assert.equal((await submit(stack, wallet.id, body)).status, 200);
    submitTarget = { executionId: s.body.result.executionId, body };
    const d = await prepare(stack, wallet, { executionId: `hd-${randomUUID()}` });
    assert.equal(d.status, 201, d.text);
    depositTarget = { executionId: d.body.result.executionId };
    assert.equal((await depositHttp(stack, wallet.id, depositTarget.executionId, DEPOSIT)).status, 200);

    const exec = (allowed: number[]): Expectation => ({ allowed, style: 'execution' });
    const wl: Expectation = { allowed: [200, 400, 408, 413], style: 'whitelist' };
    const change = (): Entries => [
      ['op_type', 'add_entry'],
      ['kind', 'user'],
      ['entry', eoa(randomBytes(20))],
    ];
    routes = [
      {
        name: 'prepare',
        method: 'POST',
        path: () => `/api/v1/executions/${wallet.id}`,
        token: () => stack.tokens.all,
        base: () => [
          ['executionId', `hp-${randomUUID()}`],
          ['intent', sampleIntent()],
          ['ttlSeconds', 600],
        ],
        expect: exec([201, 400, 409, 413]),
      },
      {
        name: 'submit',
        method: 'POST',
        path: () => `/api/v1/executions/${wallet.id}/submit`,
        base: () => Object.entries(submitTarget.body) as Entries,
        expect: exec([200, 400, 404, 409, 413]),
      },
      {
        name: 'deposit',
        method: 'POST',
        path: () => `/api/v1/executions/${wallet.id}/${depositTarget.executionId}/deposit`,
        token: () => stack.tokens.all,
        base: () => Object.entries(DEPOSIT) as Entries,
        expect: exec([200, 400, 409, 413]),
      },
      {
        name: 'get',
        method: 'GET',
        path: () => `/api/v1/executions/${wallet.id}/${submitTarget.executionId}`,
        base: () => [['ignored', true]],
        expect: exec([200]),
      },
      // Whitelist bases wrap one change in an array: the mutations act on the change object.
      { name: 'whitelists/', method: 'POST', path: () => '/chain/whitelists/', token: () => stack.tokens.all, base: change, expect: wl },
      { name: 'whitelists', method: 'POST', path: () => '/chain/whitelists', token: () => stack.tokens.all, base: change, expect: wl },
      { name: 'healthz', method: 'GET', path: () => '/healthz', base: () => [['ignored', true]], expect: exec([200]) },
    ];
  });

  after(() => {
    // The figures docs/reliability.md "Hostile input" quotes.
    console.log(tally.summary());
  });

  async function send(property: string, req: RawRequest, expect: Expectation, what: string): Promise<RawAnswer> {
    const answer = await rawRequest(stack.api.url, req);
    tally.record(property, answer);
    assertDocumented(
      answer,
      expect,
      `${what}\n  request: ${req.method} ${String(req.target).slice(0, 200)}\n  body: ${String(req.body ?? '').slice(0, 300)}`,
    );
    return answer;
  }

  const isWhitelist = (r: Route) => r.name.startsWith('whitelists');
  const wrap = (r: Route, objectBody: string) => (isWhitelist(r) ? `[${objectBody}]` : objectBody);

  /** Runs a property with the fixed seed; on failure the message names the seed to replay it with. */
  async function check<T>(name: string, arb: fc.Arbitrary<T>, numRuns: number, predicate: (t: T) => Promise<void>): Promise<void> {
    try {
      await fc.assert(fc.asyncProperty(arb, predicate), { numRuns, seed: SEED, endOnFailure: false });
    } catch (err) {
      console.error(`hostile property "${name}" failed; replay with HOSTILE_SEED=${SEED}`);
      throw err;
    }
  }

  it('when bodies are malformed (wrong types, duplicate keys, __proto__/constructor keys, deep nesting, NUL bytes, non-UTF-8, other content types), then every route answers a documented status with its error shape, never a 5xx', async () => {
    const arb = fc.nat().chain((i) => {
      const route = routes[i % routes.length];
      const valid = wrap(route, objectText(route.base()));
      const body: fc.Arbitrary<string | Buffer> = fc.oneof(
        { weight: 4, arbitrary: mutatedObject(route.base()).map((t) => wrap(route, t)) },
        { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)) },
        { weight: 1, arbitrary: hostileValue.map((v) => (v instanceof Raw ? v.text : (JSON.stringify(v) ?? 'null'))) },
        {
          weight: 1,
          arbitrary: fc
            .tuple(fc.integer({ min: 33, max: 12_000 }), fc.constantFrom<'array' | 'object'>('array', 'object'), fc.boolean())
            .map(([d, s, c]) => (route.name === 'prepare' ? `{"intent":${deepText(d, s, c)}}` : deepText(d, s, c))),
        },
        { weight: 1, arbitrary: nonUtf8(valid) },
        { weight: 1, arbitrary: withRawNul(valid) },
        { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 200 }) },
        { weight: 1, arbitrary: fc.constantFrom('', ' ', 'null', '[]', '{}', '"x"', '0', '[{}]', '{"__proto__":null}') },
      );
      const contentType = fc.option(fc.constantFrom(...CONTENT_TYPES), { nil: undefined, freq: 8 });
      return fc.record({
        route: fc.constant(route),
        body,
        contentType: fc.oneof({ weight: 6, arbitrary: fc.constant('application/json') }, { weight: 1, arbitrary: contentType }),
      });
    });
    await check('bodies', arb, RUNS.bodies, async ({ route, body, contentType }) => {
      const headers: Array<[string, string]> = [];
      if (contentType !== undefined) headers.push(['Content-Type', contentType]);
      const token = route.token?.();
      if (token) headers.push(['Authorization', `Bearer ${token}`]);
      await send('bodies', { method: route.method, target: route.path(), headers, body }, route.expect, `${route.name} body`);
    });
  });

  it('when a body is over the 64 KiB limit (Content-Length or chunked, up to 2 MB), then every POST route answers 413 before reading it; exactly 64 KiB is read', async () => {
    const posts = () => routes.filter((r) => r.method === 'POST');
    const limit = stack.config.bodyLimitBytes;
    await check(
      'oversize',
      fc.tuple(fc.nat(), fc.integer({ min: limit + 1, max: 2_000_000 }), fc.boolean()),
      RUNS.oversize,
      async ([i, size, chunked]) => {
        const route = posts()[i % posts().length];
        const token = route.token?.();
        const answer = await send(
          'oversize',
          {
            method: 'POST',
            target: route.path(),
            headers: [['Content-Type', 'application/json'], ...(token ? [['Authorization', `Bearer ${token}`] as [string, string]] : [])],
            body: Buffer.alloc(size, 0x20),
            chunked,
          },
          { ...route.expect, allowed: [413] },
          `${route.name} ${size} bytes${chunked ? ' chunked' : ''}`,
        );
        assert.equal(answer.status, 413);
      },
    );
    // At the limit exactly: read and judged on its content (an empty batch is 400, not 413).
    const exact = Buffer.concat([Buffer.from('[]'), Buffer.alloc(limit - 2, 0x20)]);
    const at = await send(
      'oversize',
      {
        method: 'POST',
        target: '/chain/whitelists/',
        headers: [
          ['Content-Type', 'application/json'],
          ['Authorization', `Bearer ${stack.tokens.all}`],
        ],
        body: exact,
      },
      { allowed: [400], style: 'whitelist' },
      'exactly the limit',
    );
    assert.match(jsonOf(at).errorMessage, /fewer than 1 items/);
  });

  it('when a schema-checked object gets a __proto__, constructor or other unknown key (top level or nested), then it is exactly 400 and nothing is created', async () => {
    const arb = fc.tuple(
      fc.constantFrom('prepare', 'submit', 'deposit', 'whitelists/'),
      fc.constantFrom(...PROTO_KEYS),
      hostileValue,
      fc.boolean(),
      fc.boolean(),
    );
    await check('protoKeys', arb, RUNS.protoKeys, async ([name, key, value, nested, first]) => {
      const route = routes.find((r) => r.name === name)!;
      let entries = route.base();
      const add = (es: Entries): Entries => (first ? [[key, value], ...es] : [...es, [key, value]]);
      if (nested && name === 'submit')
        entries = entries.map(([k, v]) => (k === 'connectEnvelope' ? [k, new Raw(objectText(add(Object.entries(v as object))))] : [k, v]));
      else entries = add(entries);
      const token = route.token?.();
      const answer = await send(
        'protoKeys',
        {
          method: 'POST',
          target: route.path(),
          headers: [['Content-Type', 'application/json'], ...(token ? [['Authorization', `Bearer ${token}`] as [string, string]] : [])],
          body: wrap(route, objectText(entries)),
        },
        { ...route.expect, allowed: [400] },
        `${name} with key ${key}`,
      );
      assert.match(
        jsonOf(answer)?.error === 'Bad Request' ? jsonOf(answer).errorMessage : jsonOf(answer).error,
        /unknown field|must|is missing|not valid JSON/,
      );
    });
    assertNotPolluted();
  });

  it('when headers are hostile (Authorization, Timeout, Content-Type, X-Request-Id, duplicates), then every answer is a documented status', async () => {
    const authValue = fc.oneof(
      fc.constant(undefined),
      fc.constantFrom(
        'Bearer',
        'Bearer ',
        'Basic dXNlcjpwYXNz',
        'Bearer ist_',
        'Bearer ' + 'a'.repeat(4000),
        'Bearer a b',
        'Bearer =',
        'Bearer \t x',
      ),
      fc.string({ maxLength: 80 }).map((s) => `Bearer ${s}`),
      fc.string({ unit: 'binary', maxLength: 40 }),
      fc.constant('VALID'),
    );
    const timeout = fc.option(
      fc.oneof(
        fc.constantFrom('-1', '1e9', 'abc', '0', '1.5', '0x10', '+5', '00', '1 2', '9'.repeat(17), '18446744073709551616', '', ' '),
        fc.string({ maxLength: 20 }),
      ),
      { nil: undefined },
    );
    const arb = fc.record({
      route: fc.constantFrom('prepare', 'submit', 'deposit', 'get', 'whitelists/', 'whitelists', 'healthz'),
      auth: authValue,
      duplicateAuth: fc.boolean(),
      timeout,
      contentType: fc.option(fc.oneof(fc.constantFrom(...CONTENT_TYPES), fc.string({ maxLength: 30 })), { nil: undefined }),
      requestId: fc.option(fc.string({ maxLength: 200 }), { nil: undefined }),
      // Most bodies are off-schema so that a valid token does not start hundreds of workflows.
      validBody: fc.nat(9).map((n) => n === 0),
    });
    await check(
      'headers',
      arb,
      RUNS.headers,
      async ({ route: name, auth, duplicateAuth, timeout: t, contentType, requestId, validBody }) => {
        const route = routes.find((r) => r.name === name)!;
        const headers: Array<[string, string | Buffer]> = [];
        // CR and LF are dropped: they would end the header line and let this test forge its own framing.
        const line = (v: string) => Buffer.from(v.replace(/[\r\n]/g, ''), 'utf8');
        const authText = auth === 'VALID' ? `Bearer ${stack.tokens.all}` : auth;
        if (authText !== undefined) headers.push(['Authorization', line(authText)]);
        if (authText !== undefined && duplicateAuth) headers.push(['Authorization', 'Bearer ist_duplicate']);
        if (t !== undefined) headers.push(['Timeout', line(t)]);
        if (contentType !== undefined) headers.push(['Content-Type', line(contentType)]);
        if (requestId !== undefined) headers.push(['X-Request-Id', line(requestId)]);
        const body = validBody ? wrap(route, objectText(route.base())) : wrap(route, objectText([...route.base(), ['extra', 1]]));
        await send(
          'headers',
          { method: route.method, target: route.path(), headers, body },
          { ...route.expect, allowed: [...route.expect.allowed, 401, 403], parserMayRefuse: true },
          `${name} headers`,
        );
      },
    );
  });

  it('when the Timeout header is not a positive integer (-1, 1e9, abc, empty, …), then a valid batch is exactly 400 and no node holds its entry', async () => {
    const bad = fc.oneof(
      fc.constantFrom('-1', '1e9', 'abc', '0', '', '1.5', '0x10', '+5', '00', '1 2', '9'.repeat(17), '-0', 'Infinity', '1,2'),
      fc.string({ unit: 'binary-ascii', maxLength: 12 }).filter((s) => !/^\s*[1-9][0-9]{0,15}\s*$/.test(s)),
    );
    const entries: string[] = [];
    await check('timeout', fc.tuple(bad, fc.uint8Array({ minLength: 20, maxLength: 20 })), RUNS.timeout, async ([value, bytes]) => {
      const entry = eoa(bytes);
      entries.push(entry);
      const answer = await send(
        'timeout',
        {
          method: 'POST',
          target: '/chain/whitelists/',
          headers: [
            ['Authorization', `Bearer ${stack.tokens.all}`],
            ['Content-Type', 'application/json'],
            ['Timeout', value],
          ],
          body: JSON.stringify([{ op_type: 'add_entry', kind: 'developer', entry }]),
        },
        { allowed: [400], style: 'whitelist', parserMayRefuse: CONTROL_CHARS_BUT_TAB.test(value) },
        `Timeout ${JSON.stringify(value)}`,
      );
      if (answer.headers['x-request-id'] !== undefined) assert.match(jsonOf(answer).errorMessage, /Timeout header/);
    });
    const held = new Set<string>();
    for (const node of stack.nodes) for (const e of await nodeEntries(node.url, 'developer')) held.add(e.toLowerCase());
    assert.deepEqual(
      entries.filter((e) => held.has(e)),
      [],
      'a batch refused for its Timeout header was applied',
    );
  });

  it('when Authorization is anything but a known Bearer token, then prepare, deposit and whitelists are exactly 401 with WWW-Authenticate: Bearer', async () => {
    const auth = fc.oneof(
      fc.constant(undefined),
      fc.string({ maxLength: 60 }).map((s) => s.replace(CONTROL_CHARS, '')),
      fc.string({ maxLength: 60 }).map((s) => `Bearer ${s.replace(CONTROL_CHARS, '')}`),
      fc.constantFrom('Basic ', 'Bearer', 'Token '),
      fc.nat(stack.tokens.all.length - 1).map((n) => `Bearer ${stack.tokens.all.slice(0, n)}`),
      fc.nat(60).map((n) => `Bearer ${stack.tokens.all}${'A'.repeat(n + 1)}`),
      fc.constant(`${stack.tokens.all}`),
    );
    await check('auth', fc.tuple(fc.constantFrom('prepare', 'deposit', 'whitelists/'), auth), RUNS.auth, async ([name, value]) => {
      const route = routes.find((r) => r.name === name)!;
      const answer = await send(
        'auth',
        {
          method: 'POST',
          target: route.path(),
          headers: [
            ['Content-Type', 'application/json'],
            ...(value === undefined ? [] : [['Authorization', Buffer.from(value, 'utf8')] as [string, Buffer]]),
          ],
          body: wrap(route, objectText(route.base())),
        },
        { ...route.expect, allowed: [401] },
        `Authorization ${JSON.stringify(value)}`,
      );
      assert.equal(answer.status, 401);
    });
  });

  it('when path parameters and methods are hostile (NUL, overlong, non-UTF-8, malformed %-escapes, dot segments, prototype names, wrong methods), then the answer is documented, and a malformed wallet or executionId is 400', async () => {
    const templates = [
      {
        method: 'POST',
        make: (a: string, _b: string) => `/api/v1/executions/${a}`,
        style: 'execution' as const,
        segments: 1,
        allowed: [400, 401],
      },
      {
        method: 'POST',
        make: (a: string, _b: string) => `/api/v1/executions/${a}/submit`,
        style: 'execution' as const,
        segments: 1,
        allowed: [400],
      },
      {
        method: 'POST',
        make: (a: string, b: string) => `/api/v1/executions/${a}/${b}/deposit`,
        style: 'execution' as const,
        segments: 2,
        allowed: [400, 401],
      },
      {
        method: 'GET',
        make: (a: string, b: string) => `/api/v1/executions/${a}/${b}`,
        style: 'execution' as const,
        segments: 2,
        allowed: [400, 404],
      },
      {
        method: 'POST',
        make: (a: string, _b: string) => `/chain/whitelists/${a}`,
        style: 'whitelist' as const,
        segments: 0,
        allowed: [404, 405],
      },
      { method: 'GET', make: (a: string, _b: string) => `/healthz/${a}`, style: 'execution' as const, segments: 0, allowed: [404, 405] },
    ];
    const methods = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS', 'PROPFIND', 'TRACE'];
    const arb = fc.record({
      t: fc.nat(templates.length - 1),
      a: hostileSegment,
      b: hostileSegment,
      query: HOSTILE_QUERY,
      method: fc.option(fc.constantFrom(...methods), { nil: undefined, freq: 4 }),
    });
    const text = (s: Segment) => (typeof s.text === 'string' ? s.text : s.text.toString('latin1'));
    await check('paths', arb, RUNS.paths, async ({ t, a, b, query, method }) => {
      const tpl = templates[t];
      const target = Buffer.from(tpl.make(text(a), text(b)) + query, 'latin1');
      const raw = a.raw || (tpl.segments === 2 && b.raw);
      const sameMethod = method === undefined || method === tpl.method;
      // Another method may land on another route (GET …/{a}/submit is the GET route): any documented
      // 4xx of a token-less request; a known path with a wrong method is 405.
      const allowed = sameMethod ? [...tpl.allowed, 404] : [400, 401, 404, 405, ...(method === 'OPTIONS' ? [200, 204] : [])];
      const sent = method ?? tpl.method;
      const answer = await send(
        'paths',
        { method: sent, target, headers: [['Content-Type', 'application/json']], body: '{}' },
        { allowed, style: tpl.style, parserMayRefuse: raw, noBody: sent === 'HEAD' },
        `path ${sent} ${tpl.make('{a}', '{b}')}`,
      );
      const malformed = (tpl.segments >= 1 && !a.valid) || (tpl.segments === 2 && !b.valid);
      const slashFree = !text(a).includes('/') && (tpl.segments < 2 || !text(b).includes('/'));
      if (sameMethod && tpl.segments > 0 && malformed && !raw && slashFree && answer.headers['x-request-id'] !== undefined) {
        assert.equal(answer.status, 400, `a malformed path parameter is 400: ${target.toString('latin1').slice(0, 120)}`);
        assert.match(jsonOf(answer).error, /path parameter/);
      }
    });
  });

  it("when a wallet path holds a NUL byte, 129+ characters, non-UTF-8 bytes, or a request line past 16 KiB, then 400 (the app), 400 (Node's parser, raw bytes) or 431", async () => {
    const cases: Array<[string | Buffer, number, 'app' | 'parser']> = [
      ['/api/v1/executions/ab%00cd/x', 400, 'app'],
      [Buffer.from('/api/v1/executions/ab\u0000cd/x', 'latin1'), 400, 'parser'],
      [`/api/v1/executions/${'w'.repeat(129)}/x`, 400, 'app'],
      [`/api/v1/executions/${'w'.repeat(10_000)}/x`, 400, 'app'],
      [`/api/v1/executions/${'w'.repeat(20_000)}/x`, 431, 'parser'],
      ['/api/v1/executions/%FF%FE/x', 400, 'app'],
      ['/api/v1/executions/%C0%AF/x', 400, 'app'],
      [Buffer.from([...Buffer.from('/api/v1/executions/'), 0xff, 0xfe, ...Buffer.from('/x')]), 400, 'parser'],
      ['/api/v1/executions/%E0%A4%A/x', 400, 'app'],
    ];
    for (const [target, status, by] of cases) {
      const answer = await send(
        'paths',
        { method: 'GET', target },
        { allowed: [status], style: 'execution', parserMayRefuse: by === 'parser' },
        `GET ${String(target).slice(0, 60)}`,
      );
      assert.equal(answer.status, status, String(target).slice(0, 80));
      assert.equal(answer.headers['x-request-id'] === undefined, by === 'parser', `${String(target).slice(0, 60)} answered by ${by}`);
    }
  });

  it('when Content-Type differs only in case or spacing, then the body is read as JSON; a Content-Encoding the service does not decode is 400; the Bearer scheme is case-insensitive', async () => {
    const post = (headers: Array<[string, string]>, body: string | Buffer) =>
      send(
        'headers',
        { method: 'POST', target: '/chain/whitelists/', headers, body },
        { allowed: [400], style: 'whitelist' },
        JSON.stringify(headers),
      );
    const auth: [string, string] = ['Authorization', `Bearer ${stack.tokens.all}`];
    for (const type of ['Application/JSON', 'application/json ; charset=UTF-8', 'APPLICATION/JSON;charset=utf-8']) {
      assert.match(jsonOf(await post([auth, ['Content-Type', type]], '[]')).errorMessage, /fewer than 1 items/, type);
    }
    assert.match(
      jsonOf(await post([auth, ['Content-Type', 'application/json'], ['Content-Encoding', 'gzip']], gzipSync('[]'))).errorMessage,
      /Content-Encoding/,
    );
    assert.match(
      jsonOf(await post([auth, ['Content-Type', 'application/json'], ['Content-Encoding', 'br']], '[]')).errorMessage,
      /Content-Encoding/,
    );
    assert.match(
      jsonOf(await post([auth, ['Content-Type', 'application/json'], ['Content-Encoding', 'identity']], '[]')).errorMessage,
      /fewer than 1 items/,
    );
    for (const scheme of ['bearer', 'BEARER', 'Bearer  ']) {
      assert.match(
        jsonOf(
          await post(
            [
              ['Authorization', `${scheme} ${stack.tokens.all}`],
              ['Content-Type', 'application/json'],
            ],
            '[]',
          ),
        ).errorMessage,
        /fewer than 1 items/,
        `scheme ${JSON.stringify(scheme)}`,
      );
    }
  });

  it('when an intent holds __proto__ and constructor keys, then it is stored and returned as sent, hashes and signs as sent, and no prototype is polluted', async () => {
    const w = newWallet();
    const intentText = '{"__proto__":{"polluted":"yes"},"constructor":{"prototype":{"polluted":"yes"}},"amount":"1","toString":"x"}';
    const executionId = `pp-${randomUUID()}`;
    const created = await send(
      'protoKeys',
      {
        method: 'POST',
        target: `/api/v1/executions/${w.id}`,
        headers: [
          ['Content-Type', 'application/json'],
          ['Authorization', `Bearer ${stack.tokens.all}`],
        ],
        body: `{"executionId":"${executionId}","intent":${intentText}}`,
      },
      { allowed: [201], style: 'execution' },
      'prepare with __proto__ in intent',
    );
    const sent = JSON.parse(intentText);
    const record = jsonOf(created).result;
    assert.deepEqual(Object.keys(record.intent), ['__proto__', 'constructor', 'amount', 'toString']);
    assert.deepEqual(record.intent, sent);
    assert.equal(record.intentHash, intentHash(sent));
    const read = (await getExecution(stack, w.id, executionId)).body.result;
    assert.equal(
      JSON.stringify(read.intent),
      JSON.stringify(sent),
      'the workflow kept the keys (through the Temporal payload converter and sandbox)',
    );
    const signed = await submit(stack, w.id, signedBody(w, executionId, sent));
    assert.equal(signed.status, 200, signed.text);
    assertNotPolluted();
  });

  it('after all of it, the service still answers correctly: healthz, a valid prepare + deposit + submit (SIGNING), a whitelist batch, and the targets kept their state', async () => {
    assertNotPolluted();
    assert.equal((await rawRequest(stack.api.url, { method: 'GET', target: '/healthz' })).status, 200);
    const w = newWallet();
    const intent = sampleIntent();
    const executionId = `after-${randomUUID()}`;
    const p = await prepare(stack, w, { executionId, intent });
    assert.equal(p.status, 201, p.text);
    assert.equal((await depositHttp(stack, w.id, executionId, { txHash: '0xafter' })).status, 200);
    const s = await submit(stack, w.id, signedBody(w, executionId, intent));
    assert.equal(s.status, 200, s.text);
    assert.deepEqual(s.body, { result: { status: 'SIGNING' } });
    assert.equal((await getExecution(stack, w.id, executionId)).body.result.status, 'SIGNING');

    const entry = eoa(randomBytes(20));
    const batch = await rawRequest(stack.api.url, {
      method: 'POST',
      target: '/chain/whitelists',
      headers: [
        ['Authorization', `Bearer ${stack.tokens.all}`],
        ['Content-Type', 'application/json'],
        ['Timeout', '30000'],
      ],
      body: JSON.stringify([{ op_type: 'add_entry', kind: 'user', entry }]),
      timeoutMs: 40_000,
    });
    assert.equal(batch.status, 200, batch.body.toString());
    const held = (await Promise.all(stack.nodes.map((n) => nodeEntries(n.url, 'user')))).flat().map((e) => e.toLowerCase());
    assert.ok(held.includes(entry));

    // Whatever the fuzz sent, the submit target still holds its one signature and the deposit target its one deposit.
    const target = (await getExecution(stack, wallet.id, submitTarget.executionId)).body.result;
    assert.equal(target.signedPayload.signature, submitTarget.body.signature);
    assert.equal(target.status, 'PREPARED');
    const dep = (await getExecution(stack, wallet.id, depositTarget.executionId)).body.result;
    assert.deepEqual(dep.deposit, DEPOSIT);
    assert.equal(dep.status, 'OPERATION_PENDING');
    assert.equal(toHex(w.publicKey), p.body.result.signerPublicKey);
  });
});
