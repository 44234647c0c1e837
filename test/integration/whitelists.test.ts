import assert from 'node:assert/strict';
import { confirmationMessage, type WhitelistChange } from '../../domain/whitelist-messages';
import { getStack, type Stack } from '../support/stack';
import { eventually } from '../support/executions';
import { changeOwnedBy, nodeEntries, postBatch, randomEoa, restartNode, setFault } from '../support/whitelists';

// Cases that must end in 500 send a long deadline: the 500 comes as soon as a node has failed, and
// a loaded machine must not turn it into a 408.
const LONG_DEADLINE = { timeout: '30000' };

describe('whitelists: POST /chain/whitelists/ against real storage-node processes', () => {
  let stack: Stack;
  before(async function () {
    this.timeout(120_000);
    stack = await getStack();
  });
  afterEach(async () => {
    for (const node of stack.nodes)
      if (node.child.exitCode === null && node.child.signalCode === null) await setFault(node.url, { delayMs: 0, fault: 'none' });
  });

  /** One add per node, in node order, so every batch touches all three. */
  const spread = (op: WhitelistChange['op_type'] = 'add_entry', kind: WhitelistChange['kind'] = 'developer') =>
    stack.nodes.map((n) => changeOwnedBy(stack, n.url, op, kind));

  async function holds(nodeIndex: number, change: WhitelistChange): Promise<boolean> {
    return (await nodeEntries(stack.nodes[nodeIndex].url, change.kind)).includes(change.entry);
  }

  it('when a mixed add/remove batch spans all three nodes, then it is 200 with one confirmation per change in order, and each node lists its entries', async () => {
    const adds = [...spread('add_entry', 'developer'), ...spread('add_entry', 'user')];
    const first = await postBatch(stack, adds);
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(first.body, adds.map(confirmationMessage));
    assert.match(first.body[0], /^0x[0-9a-fA-F]{40} added to developer whitelist$/);
    for (let i = 0; i < 3; i++) {
      assert.ok(await holds(i, adds[i]), `node ${i} holds its developer entry`);
      assert.ok(await holds(i, adds[3 + i]), `node ${i} holds its user entry`);
    }
    const mixed: WhitelistChange[] = [
      { ...adds[0], op_type: 'remove_entry' },
      changeOwnedBy(stack, stack.nodes[1].url, 'add_entry', 'user'),
      { ...adds[5], op_type: 'remove_entry' },
      { ...changeOwnedBy(stack, stack.nodes[2].url), op_type: 'remove_entry' }, // absent: not an error
    ];
    const second = await postBatch(stack, mixed);
    assert.equal(second.status, 200, second.text);
    assert.deepEqual(second.body, mixed.map(confirmationMessage));
    assert.match(second.body[0], / removed from developer whitelist$/);
    assert.equal(await holds(0, adds[0]), false);
    assert.equal(await holds(1, mixed[1]), true);
    assert.equal(await holds(2, adds[5]), false);
  });

  it('when an entry is sent in lowercase, then it is stored and confirmed in EIP-55 form', async () => {
    const lower = randomEoa();
    const res = await postBatch(stack, [{ op_type: 'add_entry', kind: 'user', entry: lower }]);
    assert.equal(res.status, 200, res.text);
    const [confirmed] = res.body;
    const entry = confirmed.split(' ')[0];
    assert.equal(entry.toLowerCase(), lower);
    assert.notEqual(entry, lower);
  });

  it('when the path has no trailing slash, then it answers the same', async () => {
    const change = changeOwnedBy(stack, stack.nodes[0].url);
    const res = await fetch(`${stack.api.url}/chain/whitelists`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.tokens.all}`, 'content-type': 'application/json' },
      body: JSON.stringify([change]),
    });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), [confirmationMessage(change)]);
  });

  describe('401', () => {
    for (const [why, header] of [
      ['the Authorization header is missing', undefined],
      ['the scheme is not Bearer', 'Basic dXNlcjpwYXNz'],
      ['the token is unknown', 'Bearer ist_not-a-real-token'],
      ['the header is "Bearer" alone', 'Bearer'],
    ] as const) {
      it(`when ${why}, then it is 401 with WWW-Authenticate: Bearer and { error, errorMessage }`, async () => {
        const res = await fetch(`${stack.api.url}/chain/whitelists/`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(header ? { authorization: header } : {}) },
          body: JSON.stringify([changeOwnedBy(stack, stack.nodes[0].url)]),
        });
        assert.equal(res.status, 401);
        assert.equal(res.headers.get('www-authenticate'), 'Bearer');
        const body = (await res.json()) as { error: string; errorMessage: string };
        assert.equal(body.error, 'Unauthorized');
        assert.equal(typeof body.errorMessage, 'string');
      });
    }
  });

  describe('400', () => {
    const valid = () => [changeOwnedBy(stack, stack.nodes[0].url)];
    const cases: Array<[string, () => { body?: unknown; raw?: string; headers?: Record<string, string> }]> = [
      ['the body is empty', () => ({ raw: '' })],
      ['the body is not JSON', () => ({ raw: '[{"op_type":' })],
      ['the body is an object, not an array', () => ({ body: valid()[0] })],
      ['the array is empty', () => ({ body: [] })],
      ['an element has an unknown field', () => ({ body: [{ ...valid()[0], extra: 1 }] })],
      ['an element lacks entry', () => ({ body: [{ op_type: 'add_entry', kind: 'user' }] })],
      ['op_type is unknown', () => ({ body: [{ ...valid()[0], op_type: 'replace_entry' }] })],
      ['kind is unknown', () => ({ body: [{ ...valid()[0], kind: 'admin' }] })],
      ['the entry is not 0x + 40 hex digits', () => ({ body: [{ ...valid()[0], entry: '0x1234' }] })],
      ['the entry lacks 0x', () => ({ body: [{ ...valid()[0], entry: randomEoa().slice(2) + '00' }] })],
      ['the entry fails its EIP-55 checksum', () => ({ body: [{ ...valid()[0], entry: '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD' }] })],
      ['the Timeout header is -1', () => ({ body: valid(), headers: { timeout: '-1' } })],
      ['the Timeout header is abc', () => ({ body: valid(), headers: { timeout: 'abc' } })],
      ['the Timeout header is 1e9', () => ({ body: valid(), headers: { timeout: '1e9' } })],
      ['the Timeout header is 0', () => ({ body: valid(), headers: { timeout: '0' } })],
    ];
    for (const [why, make] of cases) {
      it(`when ${why}, then it is 400 with { error, errorMessage } and nothing is applied`, async () => {
        const { body, raw, headers } = make();
        const res = await postBatch(stack, body, { raw, headers });
        assert.equal(res.status, 400, res.text);
        assert.equal(res.body.error, 'Bad Request');
        assert.equal(typeof res.body.errorMessage, 'string');
      });
    }

    it('when a batch has exactly MaxBatchLen changes, then it is 200; with MaxBatchLen + 1 it is 400', async () => {
      const max = stack.config.request.maxBatchLen;
      const batch = Array.from({ length: max }, (_, i) =>
        changeOwnedBy(stack, stack.nodes[i % 3].url, 'add_entry', i % 2 ? 'user' : 'developer'),
      );
      const ok = await postBatch(stack, batch);
      assert.equal(ok.status, 200, ok.text);
      assert.equal(ok.body.length, max);
      const tooMany = await postBatch(stack, [...batch, changeOwnedBy(stack, stack.nodes[0].url)]);
      assert.equal(tooMany.status, 400);
      assert.match(tooMany.body.errorMessage, /MaxBatchLen/);
    });
  });

  it('when the token lacks the scope of one change among authorised ones, then it is 403 and no node changed', async () => {
    const allowed = changeOwnedBy(stack, stack.nodes[0].url, 'add_entry', 'developer');
    const denied = changeOwnedBy(stack, stack.nodes[1].url, 'add_entry', 'user');
    const res = await postBatch(stack, [allowed, denied], { token: stack.tokens.devAdd });
    assert.equal(res.status, 403, res.text);
    assert.equal(res.body.error, 'Forbidden');
    assert.match(res.body.errorMessage, /change 1/);
    assert.equal(await holds(0, allowed), false);
    assert.equal(await holds(1, denied), false);
    const alone = await postBatch(stack, [allowed], { token: stack.tokens.devAdd });
    assert.equal(alone.status, 200, 'the same token may make the change it is scoped for');
  });

  it("when one node answers slower than a 500 ms Timeout header, then it is 408 listing exactly the other nodes' changes, and the late change is applied later", async function () {
    this.timeout(30_000);
    const batch = spread();
    await setFault(stack.nodes[1].url, { delayMs: 2000 });
    const started = Date.now();
    const res = await postBatch(stack, batch, { headers: { timeout: '500' } });
    const took = Date.now() - started;
    assert.equal(res.status, 408, res.text);
    assert.equal(res.body.error, 'Request Timeout');
    assert.equal(typeof res.body.errorMessage, 'string');
    assert.deepEqual(res.body.result, [confirmationMessage(batch[0]), confirmationMessage(batch[2])]);
    assert.ok(took < 500 + 1500, `answered within the deadline plus the margin (${took} ms)`);
    await eventually(() => holds(1, batch[1]), 10_000);
  });

  it('when a node answers after 9 s, longer than a workflow task may run (10 s timeout, 8 s heartbeat), then the first round keeps waiting within a 14 s Timeout and the batch is 200', async function () {
    this.timeout(40_000);
    const batch = spread();
    await setFault(stack.nodes[2].url, { delayMs: 9000 });
    const started = Date.now();
    const res = await postBatch(stack, batch, { headers: { timeout: '14000' } });
    const took = Date.now() - started;
    assert.equal(res.status, 200, res.text);
    assert.ok(took >= 9000 && took < 14_000, `answered when the slow node did (${took} ms)`);
    for (const [i, change] of batch.entries()) assert.equal(await holds(i, change), true);
  });

  it('when one node refuses at once while another is slow, then the answer is 500 once the slow node has answered (within the deadline), and every change is reverted', async function () {
    this.timeout(30_000);
    const batch = spread();
    await setFault(stack.nodes[0].url, { fault: 'http500' });
    await setFault(stack.nodes[1].url, { delayMs: 1500 });
    const started = Date.now();
    const res = await postBatch(stack, batch, { headers: LONG_DEADLINE });
    const took = Date.now() - started;
    assert.equal(res.status, 500, res.text);
    assert.ok(took >= 1500 && took < 10_000, `answered after the slow node (${took} ms)`);
    await eventually(async () => !(await holds(1, batch[1])) && !(await holds(2, batch[2])), 10_000);
    await setFault(stack.nodes[0].url, { fault: 'none' });
    assert.equal(await holds(0, batch[0]), false, 'the refusing node applied nothing');
  });

  it("when a node answers non-JSON, then it is 500 and the other nodes' changes are reverted", async function () {
    this.timeout(30_000);
    const batch = spread();
    await setFault(stack.nodes[2].url, { fault: 'garbage' });
    const res = await postBatch(stack, batch, { headers: LONG_DEADLINE });
    assert.equal(res.status, 500, res.text);
    assert.equal(res.body.error, 'Internal Server Error');
    assert.equal(typeof res.body.errorMessage, 'string');
    assert.ok(!res.text.includes('127.0.0.1'), 'no internal address in the body');
    await eventually(async () => !(await holds(0, batch[0])) && !(await holds(1, batch[1])), 10_000);
  });

  it("when a node answers HTTP 500, then it is 500 and the other nodes' changes are reverted", async function () {
    this.timeout(30_000);
    const batch = spread();
    await setFault(stack.nodes[0].url, { fault: 'http500' });
    const res = await postBatch(stack, batch, { headers: LONG_DEADLINE });
    assert.equal(res.status, 500, res.text);
    await eventually(async () => !(await holds(1, batch[1])) && !(await holds(2, batch[2])), 10_000);
    await setFault(stack.nodes[0].url, { fault: 'none' });
    assert.equal(await holds(0, batch[0]), false, 'the refusing node applied nothing');
  });

  it("when a node is down, then it is 500 and the other nodes' changes are reverted; after a restart the node holds nothing of the batch", async function () {
    this.timeout(60_000);
    const batch = spread();
    stack.nodes[1].child.kill('SIGKILL');
    await stack.nodes[1].exited;
    try {
      const res = await postBatch(stack, batch, { headers: LONG_DEADLINE });
      assert.equal(res.status, 500, res.text);
      await eventually(async () => !(await holds(0, batch[0])) && !(await holds(2, batch[2])), 10_000);
    } finally {
      await restartNode(stack, 1);
    }
    assert.equal(await holds(1, batch[1]), false);
  });

  it('when a node is killed with SIGKILL after acknowledging a batch and restarted, then every acknowledged change is still there', async function () {
    this.timeout(60_000);
    const batch = [...spread('add_entry', 'developer'), ...spread('add_entry', 'user')];
    const res = await postBatch(stack, batch);
    assert.equal(res.status, 200, res.text);
    stack.nodes[2].child.kill('SIGKILL');
    await stack.nodes[2].exited;
    await restartNode(stack, 2);
    assert.ok(await holds(2, batch[2]));
    assert.ok(await holds(2, batch[5]));
  });
});
