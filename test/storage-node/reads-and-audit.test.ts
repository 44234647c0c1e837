import assert from 'node:assert/strict';
import fs from 'node:fs';
import { checkAuditResponse, checkListResponse, checkMembershipResponse, type AuditRecord } from '../../contracts/storage-node-protocol';
import { toChecksumAddress } from '../../domain/eoa';
import { add, apply, kill9, killAll, list, remove, request, startNode, tempDataDir, type NodeProcess } from './node-process';

const A = '0x52908400098527886E0F7030069857D2E4169EE7';
const B = '0x8617E340B3D01FA5F11F306F4090FD50E238070D';
const C = toChecksumAddress('0xde709f2102306220921060314715629080e2fb77');
const D = toChecksumAddress('0x27b1fdb04752bbc536007a920d24acb045561c26');

/** GET a node route and check its answer against the wire schema. */
async function read<T>(url: string, check: (v: unknown) => { ok: true; value: T } | { ok: false; problem: string }): Promise<T> {
  const answer = await request(url);
  assert.equal(answer.status, 200, answer.text);
  const checked = check(answer.json());
  assert.ok(checked.ok, `off the wire contract: ${answer.text}`);
  return checked.value;
}

const audit = (node: NodeProcess, query = '') => read(`${node.url}/v1/whitelists/audit${query ? `?${query}` : ''}`, checkAuditResponse);
/** What happened, newest first, without the times (checked apart). */
const story = (records: AuditRecord[]) =>
  records.map(
    (r) => `${r.batchId}${r.revert ? ' (revert)' : ''} ${r.op_type} ${r.kind} ${r.entry} changed=${r.changed} by ${r.tokenId ?? '-'}`,
  );

describe('storage node reads: paginated list, membership, audit trail (real node processes)', function () {
  this.timeout(30_000);
  let dir: string;
  beforeEach(() => {
    dir = tempDataDir();
  });
  afterEach(async () => {
    await killAll();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('when a whitelist is read page by page, then the pages follow one order with no gap or repeat, and limit is checked', async () => {
    const node = await startNode(dir);
    const entries = [A, B, C, D, '0x0000000000000000000000000000000000000001'];
    assert.equal((await apply(node, { batchId: 'b1', position: 1, changes: entries.map((e) => add('user', e)) })).status, 200);
    const first = await read(`${node.url}/v1/whitelists/user?limit=2`, checkListResponse);
    assert.equal(first.entries.length, 2);
    assert.equal(first.next, first.entries[1]);
    const second = await read(`${node.url}/v1/whitelists/user?limit=2&after=${encodeURIComponent(first.next!)}`, checkListResponse);
    const third = await read(`${node.url}/v1/whitelists/user?limit=2&after=${encodeURIComponent(second.next!)}`, checkListResponse);
    assert.equal(third.next, undefined);
    const paged = [...first.entries, ...second.entries, ...third.entries];
    assert.deepEqual(
      paged,
      [...entries].sort((x, y) => (x.toLowerCase() < y.toLowerCase() ? -1 : 1)),
    );
    assert.deepEqual(await list(node, 'user'), paged);
    for (const query of ['limit=0', 'limit=1001', 'limit=x', 'limit=1&limit=2', 'other=1', `after=${'a'.repeat(257)}`]) {
      const answer = await request(`${node.url}/v1/whitelists/user?${query}`);
      assert.equal(answer.status, 400, query);
      assert.equal(typeof answer.json().error, 'string');
    }
  });

  it('when one entry is checked, then membership is exact and costs no list', async () => {
    const node = await startNode(dir);
    await apply(node, { batchId: 'b1', position: 1, changes: [add('developer', A)] });
    assert.deepEqual(await read(`${node.url}/v1/whitelists/developer/${A}`, checkMembershipResponse), {
      kind: 'developer',
      entry: A,
      listed: true,
    });
    assert.deepEqual(await read(`${node.url}/v1/whitelists/user/${A}`, checkMembershipResponse), { kind: 'user', entry: A, listed: false });
    assert.equal(
      (await read(`${node.url}/v1/whitelists/developer/${A.toLowerCase()}`, checkMembershipResponse)).listed,
      false,
      'the node compares exact text; the API sends EIP-55',
    );
    assert.equal((await request(`${node.url}/v1/whitelists/developer/${A}`, { method: 'POST', body: '{}' })).status, 405);
  });

  it('when batches, a repeat and a revert are applied, then the audit trail lists each delivered change once (a repeat adds nothing), newest first, with token id and time', async () => {
    const node = await startNode(dir);
    const before = new Date().toISOString();
    assert.equal(
      (await apply(node, { batchId: 'b1', position: 1, tokenId: 'alice', changes: [add('developer', A), add('developer', B)] })).status,
      200,
    );
    assert.equal(
      (await apply(node, { batchId: 'b1', position: 1, tokenId: 'alice', changes: [add('developer', A), add('developer', B)] })).status,
      200,
      'a repeat',
    );
    assert.equal(
      (await apply(node, { batchId: 'b2', position: 2, tokenId: 'bob', changes: [add('developer', A), add('user', C)] })).status,
      200,
    );
    assert.equal(
      (await apply(node, { batchId: 'b2', position: 2, tokenId: 'bob', revert: true, changes: [add('developer', A), add('user', C)] }))
        .status,
      200,
    );
    const all = await audit(node);
    assert.deepEqual(story(all.records), [
      `b2 (revert) add_entry user ${C} changed=true by bob`,
      `b2 (revert) add_entry developer ${A} changed=false by bob`,
      `b2 add_entry user ${C} changed=true by bob`,
      `b2 add_entry developer ${A} changed=false by bob`,
      `b1 add_entry developer ${B} changed=true by alice`,
      `b1 add_entry developer ${A} changed=true by alice`,
    ]);
    assert.equal(all.next, undefined);
    for (const r of all.records) assert.ok(r.appliedAt! >= before && r.appliedAt! <= new Date().toISOString(), r.appliedAt);

    assert.deepEqual(story((await audit(node, `entry=${C}`)).records), [story(all.records)[0], story(all.records)[2]]);
    assert.deepEqual(story((await audit(node, 'tokenId=alice')).records), story(all.records.slice(4)));
    assert.deepEqual(story((await audit(node, 'kind=developer&tokenId=bob')).records), [story(all.records)[1], story(all.records)[3]]);
    assert.deepEqual(await list(node, 'user'), [], 'the revert undid C');
    assert.deepEqual(await list(node, 'developer'), [A, B], "A stays: b1 added it, and b2's add of it changed nothing");
    assert.deepEqual((await audit(node, `since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).records, []);

    const page1 = await audit(node, 'limit=2');
    assert.deepEqual(story(page1.records), story(all.records.slice(0, 2)));
    const page2 = await audit(node, `limit=2&before=${page1.next}`);
    const page3 = await audit(node, `limit=2&before=${page2.next}`);
    assert.deepEqual(story([...page2.records, ...page3.records]), story(all.records.slice(2)));
    assert.equal(page3.next, undefined);
    for (const query of ['limit=0', 'before=3', 'since=yesterday', 'kind=admin', 'tokenId=', 'x=1']) {
      assert.equal((await request(`${node.url}/v1/whitelists/audit?${query}`)).status, 400, query);
    }
  });

  it('when the node is killed with SIGKILL and restarted, then the audit trail holds every acknowledged batch and goes on numbering after it', async () => {
    let node = await startNode(dir);
    for (const [i, entry] of [A, B, C, D].entries()) {
      assert.equal((await apply(node, { batchId: `b${i}`, position: i + 1, tokenId: 't', changes: [add('user', entry)] })).status, 200);
    }
    await kill9(node);
    node = await startNode(dir);
    const records = (await audit(node)).records;
    assert.deepEqual(
      records.map((r) => [r.batchId, r.seq, r.position]),
      [
        ['b3', 4, 4],
        ['b2', 3, 3],
        ['b1', 2, 2],
        ['b0', 1, 1],
      ],
    );
    assert.equal((await apply(node, { batchId: 'b5', position: 9, changes: [remove('user', A)] })).status, 200);
    assert.deepEqual(
      (await audit(node, 'limit=1')).records.map((r) => [r.batchId, r.seq, r.tokenId]),
      [['b5', 5, undefined]],
    );
  });
});
