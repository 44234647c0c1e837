import assert from 'node:assert/strict';
import fc from 'fast-check';
import { request } from '../support/http';
import { answerChecker } from '../support/openapi-check';
import { invalidValueOf, resolve, valueOf } from '../support/schema-arbitrary';
import { getStack, type Stack } from '../support/stack';
import { testSettings } from '../support/settings';

type Doc = Record<string, any>;

// What a client generated from /openapi.json sends, and what it may get back: every
// operation of the document, with requests drawn from the document's own schemas.
const VALID_PER_OPERATION = 25;
const INVALID_PER_OPERATION = 12;
const SEED = testSettings().CONTRACT_SEED ?? 12_004;

/**
 * 400 messages that blame the request's shape (the route's ajv validators and header checks).
 * Other 400s are semantic refusals the document names in descriptions: a signature that does not
 * verify, a key off the curve, a mixed-case EOA with a bad EIP-55 checksum, a stale envelope.
 */
const SHAPE_REFUSAL =
  /^(request body|wallet path parameter|executionId path parameter|Timeout header|the batch has|change \d+: entry must be 0x)/;

interface Operation {
  path: string;
  method: string;
  op: Doc;
}

function operations(doc: Doc): Operation[] {
  const out: Operation[] = [];
  for (const [path, item] of Object.entries<Doc>(doc.paths))
    for (const [method, op] of Object.entries<Doc>(item)) out.push({ path, method, op });
  return out;
}

describe('the OpenAPI document is the exact contract: requests generated from /openapi.json', function () {
  this.timeout(300_000);
  let stack: Stack;
  let doc: Doc;
  let check: ReturnType<typeof answerChecker>;
  before(async () => {
    stack = await getStack();
    doc = (await request(stack.api.url, 'GET', '/openapi.json')).body;
    check = answerChecker(doc as any);
  });

  /** Path and header parameters drawn from their schemas; `.` and `..` are left out as path segments (URLs normalise them away). */
  function parametersOf(op: Doc): fc.Arbitrary<{ path: Record<string, string>; headers: Record<string, string> }> {
    const params = (op.parameters ?? [])
      .map((p: Doc) => (p.$ref ? resolve(p.$ref, doc.components) : p))
      .filter((p: Doc) => p.name !== 'X-Request-Id');
    const path: Record<string, fc.Arbitrary<string>> = {};
    const headers: Record<string, fc.Arbitrary<string>> = {};
    for (const p of params) {
      const value = valueOf(p.schema, doc.components) as fc.Arbitrary<string>;
      if (p.in === 'path') path[p.name] = value.filter((v) => v !== '.' && v !== '..');
      else if (p.in === 'header') headers[p.name] = value;
    }
    return fc.record({ path: fc.record(path), headers: fc.record(headers, { requiredKeys: [] }) }) as any;
  }

  /** Fills `{name}` in the path template. */
  const fill = (template: string, values: Record<string, string>) =>
    template.replace(/\{([^}]+)\}/g, (_, name) => encodeURIComponent(values[name]));

  async function send(o: Operation, params: { path: Record<string, string>; headers: Record<string, string> }, body: unknown) {
    const headers: Record<string, string> = { ...params.headers };
    const token = o.op.security?.length ? stack.tokens.all : undefined;
    return request(stack.api.url, o.method.toUpperCase(), fill(o.path, params.path), { json: body, headers, token });
  }

  function checkAnswer(o: Operation, res: Awaited<ReturnType<typeof request>>, what: string): void {
    const documented = Object.keys(o.op.responses);
    assert.ok(
      documented.includes(String(res.status)),
      `${what}: ${res.status} is not documented for ${o.method.toUpperCase()} ${o.path} (${documented.join(', ')}): ${res.text.slice(0, 300)}`,
    );
    if (res.headers.get('content-type')?.startsWith('application/json')) check(o.path, o.method, res.status, res.body);
  }

  /**
   * A schema-valid whitelist batch only removes entries nobody added, so it changes no node; its
   * entries are lowercased so that some batches get past the EIP-55 check (random mixed case
   * almost never passes it, which is a semantic 400 the document names).
   */
  const harmless = (o: Operation, body: unknown) =>
    o.path.startsWith('/chain/whitelists') && Array.isArray(body)
      ? body.map((c: Doc) => ({ ...c, op_type: 'remove_entry', entry: typeof c.entry === 'string' ? c.entry.toLowerCase() : c.entry }))
      : withoutDeposit(o, body);

  /**
   * The shared stack watches no chain, so a prepare with an on-chain `deposit` is a 400 there (the
   * chain test prepares them on anvil); the field is left out so that prepares reach their 201.
   */
  const withoutDeposit = (o: Operation, body: unknown) => {
    if (o.method !== 'post' || o.path !== '/api/v1/executions/{wallet}' || typeof body !== 'object' || body === null) return body;
    const { deposit: _deposit, ...rest } = body as Doc;
    return rest;
  };

  it('when schema-valid requests are sent to every operation, then each answer is a documented status whose body matches its schema, and none is refused for its shape', async () => {
    const seen = new Map<string, Set<number>>();
    for (const [i, o] of operations(doc).entries()) {
      const bodySchema = o.op.requestBody?.content?.['application/json']?.schema;
      const arb = fc.tuple(parametersOf(o.op), bodySchema ? valueOf(bodySchema, doc.components) : fc.constant(undefined));
      const statuses = new Set<number>();
      for (const [params, rawBody] of fc.sample(arb, { numRuns: VALID_PER_OPERATION, seed: SEED + i })) {
        const body = harmless(o, rawBody);
        const res = await send(o, params, body);
        const what = `valid ${JSON.stringify({ params, body }).slice(0, 400)}`;
        checkAnswer(o, res, what);
        if (res.status === 400) {
          const message = res.body.errorMessage ?? res.body.error;
          assert.doesNotMatch(message, SHAPE_REFUSAL, `${what} was refused for its shape: ${message}`);
        }
        statuses.add(res.status);
      }
      seen.set(`${o.method.toUpperCase()} ${o.path}`, statuses);
    }
    // The run reached the operations' real answers, not only refusals.
    assert.ok(seen.get('POST /api/v1/executions/{wallet}')!.has(201), JSON.stringify([...seen].map(([k, v]) => [k, [...v]])));
    assert.ok(seen.get('POST /chain/whitelists/')!.has(200), JSON.stringify([...seen].map(([k, v]) => [k, [...v]])));
  });

  it('when schema-invalid bodies are sent to every operation that takes one, then each is 400 in the documented error shape', async () => {
    let sent = 0;
    for (const [i, o] of operations(doc).entries()) {
      const bodySchema = o.op.requestBody?.content?.['application/json']?.schema;
      if (!bodySchema) continue;
      const arb = fc.tuple(parametersOf(o.op), invalidValueOf(bodySchema, doc.components));
      for (const [params, body] of fc.sample(arb, { numRuns: INVALID_PER_OPERATION, seed: SEED + 100 + i })) {
        const res = await send(o, params, body);
        assert.equal(res.status, 400, `invalid ${JSON.stringify(body).slice(0, 300)} to ${o.path}: ${res.text.slice(0, 300)}`);
        checkAnswer(o, res, 'invalid');
        sent++;
      }
    }
    assert.ok(sent >= 5 * INVALID_PER_OPERATION, `sent ${sent}`);
  });
});
