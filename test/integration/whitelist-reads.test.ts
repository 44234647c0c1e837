import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { ownerOf } from '../../domain/rendezvous';
import { ownerKey, type WhitelistChange } from '../../domain/whitelist-messages';
import { createToken } from '../../tokens/token-store';
import { eventually } from '../support/executions';
import { request } from '../support/http';
import { getStack, type Stack } from '../support/stack';
import { changeOwnedBy, nodeEntries, postBatch, randomEoa, restartNode, setFault } from '../support/whitelists';

const EIP55_OR_PLAIN = /^0x[0-9a-fA-F]{40}$/;
// Cases that must end in 500 send a long deadline (as in whitelists.test.ts).
const LONG_DEADLINE = { timeout: '30000' };

interface AuditRecord {
  batchId: string;
  revert: boolean;
  op_type: string;
  kind: string;
  entry: string;
  changed: boolean;
  node: string;
  tokenId?: string;
  appliedAt?: string;
}

describe('whitelist reads: entries, membership, batch status and audit trail against real storage-node processes', function () {
  this.timeout(60_000);
  let stack: Stack;
  /** Tokens made for this file: scopes the stack's own tokens do not cover. */
  const tokens: Record<string, string> = {};
  const get = (path: string, token?: string) => request(stack.api.url, 'GET', path, { token });

  before(async function () {
    this.timeout(120_000);
    stack = await getStack();
    const file = stack.config.apiTokensFile;
    tokens.read = createToken(file, 'reads-read', ['whitelist:read']);
    tokens.userAll = createToken(file, 'reads-user-all', ['whitelist:user:*']);
    tokens.devAdd = createToken(file, 'reads-dev-add', ['whitelist:developer:add']);
    tokens.otherDevAdd = createToken(file, 'reads-other-dev-add', ['whitelist:developer:add']);
    tokens.audit = createToken(file, 'reads-audit', ['whitelist:audit']);
    tokens.executions = createToken(file, 'reads-executions', ['executions:prepare']);
  });
  afterEach(async () => {
    for (const node of stack.nodes)
      if (node.child.exitCode === null && node.child.signalCode === null) await setFault(node.url, { delayMs: 0, fault: 'none' });
  });

  const spread = (op: WhitelistChange['op_type'] = 'add_entry', kind: WhitelistChange['kind'] = 'developer') =>
    stack.nodes.map((n) => changeOwnedBy(stack, n.url, op, kind));
  // Answers name a node by its place in STORAGE_NODES (node-N), never by its address.
  const owner = (change: WhitelistChange) => {
    const urls = stack.nodes.map((n) => n.url);
    return `node-${urls.indexOf(ownerOf(ownerKey(change), urls)) + 1}`;
  };

  describe('GET /chain/whitelists/{kind}', () => {
    it('when the list is read in pages of 7, then the pages together are exactly the entries each owner node holds, merged, sorted, EIP-55, without repeats', async () => {
      const added = spread('add_entry', 'user');
      assert.equal((await postBatch(stack, added)).status, 200);
      // Each entry as its owner node holds it: a copy on another node (left by a test that ran
      // before, as a partition or a changed STORAGE_NODES leaves one) is not listed.
      const urls = stack.nodes.map((n) => n.url);
      const expected = (
        await Promise.all(
          stack.nodes.map(async (n) =>
            (await nodeEntries(n.url, 'user')).filter((entry) => ownerOf(ownerKey({ kind: 'user', entry }), urls) === n.url),
          ),
        )
      )
        .flat()
        .sort((a, b) => (a.toLowerCase() < b.toLowerCase() ? -1 : 1));
      const paged: string[] = [];
      let pageToken: string | undefined;
      let pages = 0;
      do {
        const res = await get(`/chain/whitelists/user?pageSize=7${pageToken ? `&pageToken=${pageToken}` : ''}`, tokens.read);
        assert.equal(res.status, 200, res.text);
        assert.ok(res.body.result.length <= 7 && res.body.result.length > 0, `page ${pages} has ${res.body.result.length} entries`);
        paged.push(...res.body.result);
        pageToken = res.body.nextPageToken;
        pages++;
      } while (pageToken);
      assert.deepEqual(paged, expected);
      assert.equal(pages, Math.ceil(expected.length / 7));
      for (const change of added) assert.ok(paged.includes(change.entry), change.entry);
      for (const entry of paged) assert.match(entry, EIP55_OR_PLAIN);
      const whole = await get('/chain/whitelists/user?pageSize=1000', tokens.read);
      assert.deepEqual(whole.body.result, expected.slice(0, 1000));
      const byDefault = await get('/chain/whitelists/user', tokens.read);
      assert.deepEqual(byDefault.body.result, expected.slice(0, 100));
    });

    it('when removed entries lie in a long run before the next listed one, then a page still reaches it: each round of node reads takes four times more', async () => {
      // Entries that sort before any random address: 40 added, the first 39 removed again.
      const prefix = `0x00000000${randomUUID().replace(/-/g, '').slice(0, 8)}`;
      const entries = Array.from({ length: 40 }, (_, i) => `${prefix}${i.toString(16).padStart(24, '0')}`);
      const add = entries.map((entry) => ({ op_type: 'add_entry', kind: 'developer', entry }));
      assert.equal((await postBatch(stack, add)).status, 200);
      const remove = entries.slice(0, 39).map((entry) => ({ op_type: 'remove_entry', kind: 'developer', entry }));
      assert.equal((await postBatch(stack, remove)).status, 200);
      // One entry a page: four rounds of one would read 4 of the 39 removed ones and answer nothing.
      const first = await get('/chain/whitelists/developer?pageSize=1', tokens.read);
      assert.equal(first.status, 200, first.text);
      assert.deepEqual(
        first.body.result.map((e: string) => e.toLowerCase()),
        [entries[39]],
        'the first listed entry, past the 39 removed ones',
      );
    });

    for (const [why, query] of [
      ['pageSize is 0', 'pageSize=0'],
      ['pageSize is 1001', 'pageSize=1001'],
      ['pageSize is not a number', 'pageSize=ten'],
      ['pageSize is repeated', 'pageSize=1&pageSize=2'],
      ['a parameter is unknown', 'limit=5'],
      ['pageToken is not one the API gave out', 'pageToken=bm90LWEtdG9rZW4'],
    ] as const) {
      it(`when ${why}, then it is 400 with { error, errorMessage }`, async () => {
        const res = await get(`/chain/whitelists/developer?${query}`, tokens.read);
        assert.equal(res.status, 400, res.text);
        assert.equal(res.body.error, 'Bad Request');
        assert.equal(typeof res.body.errorMessage, 'string');
      });
    }

    it('when the kind is unknown, then it is 400', async () => {
      const res = await get('/chain/whitelists/admin', tokens.read);
      assert.equal(res.status, 400, res.text);
    });
  });

  describe('GET /chain/whitelists/{kind}/{entry}', () => {
    it('when an entry is added, then it is listed under its EIP-55 form whatever case is asked, and not on the other kind', async () => {
      const [change] = spread();
      assert.equal((await postBatch(stack, [change])).status, 200);
      for (const spelling of [change.entry, change.entry.toLowerCase()]) {
        const res = await get(`/chain/whitelists/developer/${spelling}`, tokens.read);
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(res.body, { result: { kind: 'developer', entry: change.entry, listed: true } });
      }
      assert.equal((await get(`/chain/whitelists/user/${change.entry}`, tokens.read)).body.result.listed, false);
      assert.equal((await postBatch(stack, [{ ...change, op_type: 'remove_entry' }])).status, 200);
      assert.equal((await get(`/chain/whitelists/developer/${change.entry}`, tokens.read)).body.result.listed, false);
    });

    it('when the entry is not an EOA or fails its EIP-55 checksum, then it is 400', async () => {
      for (const entry of ['0x1234', '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD']) {
        const res = await get(`/chain/whitelists/developer/${entry}`, tokens.read);
        assert.equal(res.status, 400, res.text);
        assert.equal(res.body.error, 'Bad Request');
      }
    });
  });

  describe('scopes (401 and 403 as for writes)', () => {
    const entry = () => randomEoa();
    it('when there is no token or an unknown one, then every read route is 401 with WWW-Authenticate: Bearer', async () => {
      for (const path of [
        '/chain/whitelists/user',
        `/chain/whitelists/user/${entry()}`,
        `/chain/whitelists/batches/${randomUUID()}`,
        '/chain/whitelists/audit',
      ]) {
        for (const token of [undefined, 'ist_not-a-real-token']) {
          const res = await get(path, token);
          assert.equal(res.status, 401, `${path}: ${res.text}`);
          assert.equal(res.headers.get('www-authenticate'), 'Bearer');
          assert.equal(res.body.error, 'Unauthorized');
        }
      }
    });

    it('when a token has whitelist:read, whitelist:{kind}:*, whitelist:* or only a write scope, then it reads exactly the kinds those grant, and the audit needs whitelist:audit or whitelist:*', async () => {
      const cases: Array<[string, string, number]> = [
        ['read', '/chain/whitelists/developer', 200],
        ['read', `/chain/whitelists/user/${entry()}`, 200],
        ['userAll', '/chain/whitelists/user', 200],
        ['userAll', `/chain/whitelists/developer/${entry()}`, 403],
        ['devAdd', '/chain/whitelists/developer', 403],
        ['executions', '/chain/whitelists/user', 403],
        ['read', '/chain/whitelists/audit', 403],
        ['userAll', '/chain/whitelists/audit', 403],
        ['audit', '/chain/whitelists/audit?pageSize=1', 200],
        ['audit', '/chain/whitelists/user', 403],
      ];
      for (const [name, path, status] of cases) {
        const res = await get(path, tokens[name]);
        assert.equal(res.status, status, `${name} ${path}: ${res.text}`);
        if (status === 403) assert.equal(res.body.error, 'Forbidden');
      }
      assert.equal((await get('/chain/whitelists/audit?pageSize=1', stack.tokens.all)).status, 200, 'whitelist:* reads the audit');
      assert.equal((await get('/chain/whitelists/developer?pageSize=1', stack.tokens.all)).status, 200, 'whitelist:* reads every kind');
    });
  });

  describe('GET /chain/whitelists/batches/{batchId}', () => {
    it("when a batch answered 200, then its status shows the outcome, the token id, its times and each change applied with the node's changed flag", async () => {
      const first = spread();
      assert.equal((await postBatch(stack, first)).status, 200);
      const batch = [first[0], ...spread().slice(1)]; // first[0] is already present: changed false
      const res = await postBatch(stack, batch);
      assert.equal(res.status, 200, res.text);
      const batchId = res.headers.get('x-batch-id')!;
      const status = await eventually(async () => {
        const answer = await get(`/chain/whitelists/batches/${batchId}`, tokens.read);
        assert.equal(answer.status, 200, answer.text);
        return answer.body.result.workflowStatus === 'completed' && answer.body.result;
      });
      assert.equal(status.batchId, batchId);
      assert.equal(status.tokenId, 'all');
      assert.deepEqual(status.outcome, { status: 200 });
      assert.ok(Date.parse(status.startedAt) <= Date.parse(status.closedAt));
      assert.deepEqual(
        status.changes,
        batch.map((c, i) => ({ ...c, node: owner(c), state: 'applied', changed: i !== 0 })),
      );
    });

    it('when a client got a 408, then it follows its batch with this route from pending to applied', async function () {
      this.timeout(60_000);
      const batch = spread();
      // The late node holds each attempt 5 s: the first read, right after the 408, finds it pending.
      await setFault(stack.nodes[1].url, { delayMs: 5000 });
      const res = await postBatch(stack, batch, { headers: { timeout: '500' } });
      assert.equal(res.status, 408, res.text);
      const batchId = res.headers.get('x-batch-id')!;
      const early = await get(`/chain/whitelists/batches/${batchId}`, tokens.read);
      assert.equal(early.status, 200, early.text);
      assert.equal(early.body.result.workflowStatus, 'running');
      assert.equal(early.body.result.outcome.status, 408);
      assert.equal(typeof early.body.result.outcome.errorMessage, 'string');
      assert.deepEqual(
        early.body.result.changes.map((c: { state: string }) => c.state),
        ['applied', 'pending', 'applied'],
      );
      assert.equal(early.body.result.changes[1].changed, undefined, 'no answer from the late node yet');
      await setFault(stack.nodes[1].url, { delayMs: 0 });
      const done = await eventually(
        async () => {
          const answer = await get(`/chain/whitelists/batches/${batchId}`, tokens.read);
          return answer.body.result.workflowStatus === 'completed' && answer.body.result;
        },
        30_000,
        250,
      );
      assert.deepEqual(
        done.changes,
        batch.map((c) => ({ ...c, node: owner(c), state: 'applied', changed: true })),
      );
      assert.equal(done.outcome.status, 408, 'the outcome stays what the client was answered');
    });

    it("when a batch answered 500, then the status shows the refusing node's change not applied and the others reverted, and names no node in the message", async function () {
      this.timeout(60_000);
      const batch = spread();
      await setFault(stack.nodes[0].url, { fault: 'http500' });
      const res = await postBatch(stack, batch, { headers: LONG_DEADLINE });
      assert.equal(res.status, 500, res.text);
      const batchId = res.headers.get('x-batch-id')!;
      const done = await eventually(
        async () => {
          const answer = await get(`/chain/whitelists/batches/${batchId}`, tokens.read);
          return answer.body.result.workflowStatus === 'completed' && answer.body.result;
        },
        30_000,
        250,
      );
      assert.equal(done.outcome.status, 500);
      assert.ok(!done.outcome.errorMessage.includes('127.0.0.1'), done.outcome.errorMessage);
      assert.deepEqual(
        done.changes.map((c: { state: string; changed?: boolean }) => [c.state, c.changed]),
        [
          ['not-applied', undefined],
          ['reverted', true],
          ['reverted', true],
        ],
      );
    });

    it('when the batch id is unknown, then it is 404; when it is not a UUID, then it is 400', async () => {
      const unknown = await get(`/chain/whitelists/batches/${randomUUID()}`, tokens.read);
      assert.equal(unknown.status, 404, unknown.text);
      assert.equal(unknown.body.error, 'Not Found');
      const bad = await get('/chain/whitelists/batches/not-a-uuid', tokens.read);
      assert.equal(bad.status, 400, bad.text);
    });

    it('when the token that made a batch has only a write scope, then it may follow its own batch, and another such token may not', async () => {
      const [change] = spread();
      const res = await postBatch(stack, [change], { token: tokens.devAdd });
      assert.equal(res.status, 200, res.text);
      const path = `/chain/whitelists/batches/${res.headers.get('x-batch-id')}`;
      assert.equal((await get(path, tokens.devAdd)).status, 200);
      assert.equal((await get(path, tokens.otherDevAdd)).status, 403);
      assert.equal((await get(path, tokens.executions)).status, 403);
      assert.equal((await get(path, tokens.userAll)).status, 403, 'whitelist:user:* does not read a developer batch');
    });
  });

  describe('GET /chain/whitelists/audit', () => {
    it('when batches answered 200, 500 (with revert) and 408 (completed late), then the audit shows exactly what happened to each entry, newest first, and pages through it without gaps', async function () {
      this.timeout(90_000);
      const tokenId = `audited-${randomUUID().slice(0, 8)}`;
      const token = createToken(stack.config.apiTokensFile, tokenId, ['whitelist:*']);
      const adds = spread();
      const okRes = await postBatch(stack, adds, { token });
      assert.equal(okRes.status, 200, okRes.text);

      const failing = spread();
      await setFault(stack.nodes[0].url, { fault: 'http500' });
      const failRes = await postBatch(stack, failing, { token, headers: LONG_DEADLINE });
      assert.equal(failRes.status, 500, failRes.text);
      const failId = failRes.headers.get('x-batch-id')!;
      await eventually(
        async () => (await get(`/chain/whitelists/batches/${failId}`, token)).body.result.workflowStatus === 'completed',
        30_000,
        250,
      );
      await setFault(stack.nodes[0].url, { fault: 'none' });

      const late = spread();
      await setFault(stack.nodes[2].url, { delayMs: 2000 });
      const lateRes = await postBatch(stack, late, { token, headers: { timeout: '500' } });
      assert.equal(lateRes.status, 408, lateRes.text);
      const lateId = lateRes.headers.get('x-batch-id')!;
      await eventually(
        async () => (await get(`/chain/whitelists/batches/${lateId}`, token)).body.result.workflowStatus === 'completed',
        30_000,
        250,
      );

      const okId = okRes.headers.get('x-batch-id')!;
      const all = await get(`/chain/whitelists/audit?tokenId=${tokenId}&pageSize=100`, token);
      assert.equal(all.status, 200, all.text);
      assert.equal(all.body.nextPageToken, undefined);
      const records: AuditRecord[] = all.body.result;
      // Newest first in the order of changes (a batch's position: its start), not by when each node
      // applied it: a late batch's copies are applied after newer batches started.
      const positions = records.map((r) => (r as AuditRecord & { position: number }).position);
      assert.deepEqual(
        positions,
        [...positions].sort((a, b) => b - a),
        'newest first',
      );

      const line = (r: AuditRecord) => `${r.batchId}${r.revert ? ' revert' : ''} ${r.op_type} ${r.entry} changed=${r.changed} on ${r.node}`;
      const expected = new Set([
        ...adds.map((c) => `${okId} add_entry ${c.entry} changed=true on ${owner(c)}`),
        // The refusing node (0) applied nothing; nodes 1 and 2 applied, then undid their change.
        ...failing
          .slice(1)
          .flatMap((c) => [
            `${failId} add_entry ${c.entry} changed=true on ${owner(c)}`,
            `${failId} revert add_entry ${c.entry} changed=true on ${owner(c)}`,
          ]),
        ...late.map((c) => `${lateId} add_entry ${c.entry} changed=true on ${owner(c)}`),
      ]);
      assert.deepEqual(new Set(records.map(line)), expected);
      assert.equal(records.length, expected.size);
      for (const r of records) assert.equal(r.tokenId, tokenId);

      // Per entry: the 500 batch's change on a node that applied it shows the add, then (newer) its revert.
      const reverted = await get(`/chain/whitelists/audit?entry=${failing[1].entry.toLowerCase()}`, tokens.audit);
      assert.deepEqual(reverted.body.result.map(line), [
        `${failId} revert add_entry ${failing[1].entry} changed=true on ${owner(failing[1])}`,
        `${failId} add_entry ${failing[1].entry} changed=true on ${owner(failing[1])}`,
      ]);
      assert.deepEqual((await get(`/chain/whitelists/audit?entry=${failing[0].entry}`, tokens.audit)).body.result, []);
      assert.deepEqual((await get(`/chain/whitelists/audit?entry=${late[2].entry}&kind=developer`, tokens.audit)).body.result.map(line), [
        `${lateId} add_entry ${late[2].entry} changed=true on ${owner(late[2])}`,
      ]);
      assert.deepEqual((await get(`/chain/whitelists/audit?entry=${late[2].entry}&kind=user`, tokens.audit)).body.result, []);
      const since = await get(
        `/chain/whitelists/audit?tokenId=${tokenId}&since=${encodeURIComponent(records[0].appliedAt!)}`,
        tokens.audit,
      );
      assert.deepEqual(since.body.result.map(line), records.filter((r) => r.appliedAt! >= records[0].appliedAt!).map(line));

      const paged: AuditRecord[] = [];
      let pageToken: string | undefined;
      do {
        const res = await get(
          `/chain/whitelists/audit?tokenId=${tokenId}&pageSize=2${pageToken ? `&pageToken=${pageToken}` : ''}`,
          tokens.audit,
        );
        assert.equal(res.status, 200, res.text);
        assert.ok(res.body.result.length <= 2);
        paged.push(...res.body.result);
        pageToken = res.body.nextPageToken;
      } while (pageToken);
      assert.deepEqual(paged, records);
    });

    it('when a query parameter is off-schema, then it is 400', async () => {
      for (const query of ['kind=admin', 'entry=0x12', 'since=yesterday', 'tokenId=a%20b', 'pageSize=0', 'pageToken=e30', 'other=1']) {
        const res = await get(`/chain/whitelists/audit?${query}`, tokens.audit);
        assert.equal(res.status, 400, `${query}: ${res.text}`);
        assert.equal(res.body.error, 'Bad Request');
      }
    });
  });

  describe('a storage node is down', () => {
    it('when one node is killed, then the list and the audit answer 503 naming it, membership answers 503 for its entries only, and all recover after its restart', async function () {
      this.timeout(60_000);
      const [onNode0, onNode1] = spread();
      assert.equal((await postBatch(stack, [onNode0, onNode1])).status, 200);
      const down = stack.nodes[1];
      down.child.kill('SIGKILL');
      await down.exited;
      try {
        for (const [path, token] of [
          ['/chain/whitelists/developer', tokens.read],
          ['/chain/whitelists/audit', tokens.audit],
          [`/chain/whitelists/developer/${onNode1.entry}`, tokens.read],
        ] as const) {
          const res = await get(path, token);
          assert.equal(res.status, 503, `${path}: ${res.text}`);
          assert.equal(res.body.error, 'Service Unavailable');
          assert.ok(res.body.errorMessage.includes('node-2'), `${path} names the node: ${res.body.errorMessage}`);
          assert.ok(!/https?:|127\.0\.0\.1/.test(res.text), `${path} reveals no address: ${res.text}`);
          assert.match(res.headers.get('retry-after') ?? '', /^[0-9]+$/);
        }
        const other = await get(`/chain/whitelists/developer/${onNode0.entry}`, tokens.read);
        assert.equal(other.status, 200, 'membership asks only the owner node');
        assert.equal(other.body.result.listed, true);
      } finally {
        await restartNode(stack, 1);
      }
      const back = await get(`/chain/whitelists/developer/${onNode1.entry}`, tokens.read);
      assert.equal(back.status, 200);
      assert.equal(back.body.result.listed, true);
      assert.equal((await get('/chain/whitelists/developer?pageSize=1', tokens.read)).status, 200);
    });
  });
});
