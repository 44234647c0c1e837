import assert from 'node:assert/strict';
import fs from 'node:fs';
import { spawnSync } from 'node:child_process';
import { toChecksumAddress } from '../../domain/eoa';
import { notPinoLines } from '../support/log-lines';
import {
  add,
  apply,
  FAULTY_JS,
  kill9,
  killAll,
  list,
  MAIN_JS,
  remove,
  request,
  startNode,
  tempDataDir,
  type NodeProcess,
} from './node-process';

const A = '0x52908400098527886E0F7030069857D2E4169EE7';
const B = '0x8617E340B3D01FA5F11F306F4090FD50E238070D';

describe('storage node process', function () {
  this.timeout(30_000);
  let dir: string;

  beforeEach(() => {
    dir = tempDataDir();
  });
  afterEach(async () => {
    await killAll();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  describe('apply and list', () => {
    let node: NodeProcess;
    beforeEach(async () => {
      node = await startNode(dir);
    });

    it('when started, then it logs exactly one line, its listening line (pino JSON with its URL), and answers /healthz', async () => {
      const lines = node.stdout().split('\n');
      assert.equal(lines.pop(), '', 'whole lines');
      assert.deepEqual(notPinoLines(lines), []);
      assert.equal(lines.length, 1, node.stdout());
      const line = JSON.parse(lines[0]) as { level: number; name: string; url: string; msg: string };
      assert.match(line.msg, /^storage-node listening on http:\/\/127\.0\.0\.1:\d+$/);
      assert.deepEqual([line.level, line.name, line.url], [30, 'storage-node', node.url]);
      assert.equal(node.stderr(), '');
      const health = await request(`${node.url}/healthz`);
      assert.equal(health.status, 200);
      assert.deepEqual(health.json(), { ok: true });
    });

    it('when a batch adds and removes, then each result says whether it changed the set, in order', async () => {
      const answer = await apply(node, {
        batchId: 'b1',
        position: 1,
        changes: [add('developer', B), add('developer', A), add('developer', A), remove('user', A), add('user', A), remove('user', A)],
      });
      assert.equal(answer.status, 200);
      assert.deepEqual(answer.json(), {
        batchId: 'b1',
        results: [
          { kind: 'developer', entry: B, op_type: 'add_entry', changed: true, superseded: false },
          { kind: 'developer', entry: A, op_type: 'add_entry', changed: true, superseded: false },
          { kind: 'developer', entry: A, op_type: 'add_entry', changed: false, superseded: false },
          { kind: 'user', entry: A, op_type: 'remove_entry', changed: false, superseded: false },
          { kind: 'user', entry: A, op_type: 'add_entry', changed: true, superseded: false },
          { kind: 'user', entry: A, op_type: 'remove_entry', changed: true, superseded: false },
        ],
      });
      assert.deepEqual(await request(`${node.url}/v1/whitelists/developer`).then((a) => a.json()), {
        kind: 'developer',
        entries: [A, B],
      });
      assert.deepEqual(await list(node, 'user'), []);
    });

    it('when an entry is not an EOA in its EIP-55 form, then the batch is 400 and nothing is applied', async () => {
      const answer = await apply(node, { batchId: 'b1', position: 1, changes: [add('user', A), add('user', A.toLowerCase())] });
      assert.equal(answer.status, 400);
      assert.match(answer.json().error, /changes\.1\.entry is not an EOA/);
      assert.deepEqual(await list(node, 'user'), []);
    });

    it('when a batchId is sent again, then the first results come back and nothing is applied again', async () => {
      const first = await apply(node, { batchId: 'b1', position: 1, changes: [add('user', A)] });
      await apply(node, { batchId: 'b2', position: 2, changes: [remove('user', A)] });
      const repeat = await apply(node, { batchId: 'b1', position: 1, changes: [add('user', A)] });
      assert.equal(repeat.status, 200);
      assert.equal(repeat.text, first.text);
      assert.deepEqual(await list(node, 'user'), []);
    });

    it('when an older batch arrives after a newer one, then it is acknowledged as superseded and the newer one decides the entry', async () => {
      assert.equal((await apply(node, { batchId: 'new', position: 20, changes: [remove('user', A), add('user', B)] })).status, 200);
      const late = await apply(node, { batchId: 'old', position: 10, changes: [add('user', A), remove('user', B)] });
      assert.equal(late.status, 200);
      assert.deepEqual(
        late.json().results.map((r: { changed: boolean; superseded: boolean }) => [r.changed, r.superseded]),
        [
          [false, true],
          [false, true],
        ],
      );
      assert.deepEqual(await list(node, 'user'), [B]);
    });

    it('when the body is not JSON or off-shape, then it is 400 with an error and nothing is applied', async () => {
      const url = `${node.url}/v1/whitelists/apply`;
      const bodies = [
        '',
        '{"batchId":',
        '[]',
        JSON.stringify({ changes: [add('user', A)] }),
        JSON.stringify({ batchId: '', position: 1, changes: [add('user', A)] }),
        JSON.stringify({ batchId: 'x'.repeat(201), position: 1, changes: [add('user', A)] }),
        JSON.stringify({ batchId: 'b', position: 1, changes: {} }),
        JSON.stringify({ batchId: 'b', position: 1, changes: [{ op_type: 'upsert', kind: 'user', entry: A }] }),
        JSON.stringify({ batchId: 'b', position: 1, changes: [{ op_type: 'add_entry', kind: 'admin', entry: A }] }),
        JSON.stringify({ batchId: 'b', position: 1, changes: [{ op_type: 'add_entry', kind: 'user', entry: '' }] }),
        JSON.stringify({ batchId: 'b', position: 1, changes: [{ op_type: 'add_entry', kind: 'user', entry: 7 }] }),
        JSON.stringify({ batchId: 'b', position: 1, changes: [{ ...add('user', A), extra: 1 }] }),
        JSON.stringify({ batchId: 'b', position: 1, changes: [], extra: 1 }),
      ];
      for (const body of bodies) {
        const answer = await request(url, { method: 'POST', body });
        assert.equal(answer.status, 400, `body ${body.slice(0, 80)}`);
        assert.equal(typeof answer.json().error, 'string');
      }
      assert.deepEqual(await list(node, 'user'), []);
      // The rejected batchId "b" was not remembered, so it can still be used.
      assert.equal((await apply(node, { batchId: 'b', position: 1, changes: [add('user', A)] })).status, 200);
    });

    it('when the body is over 1 MiB, then it is 413 and nothing is applied', async () => {
      const body = JSON.stringify({ batchId: 'big', position: 1, changes: [add('user', A)], pad: 'x'.repeat(1024 * 1024) });
      const answer = await request(`${node.url}/v1/whitelists/apply`, { method: 'POST', body });
      assert.equal(answer.status, 413);
      assert.equal(typeof answer.json().error, 'string');
      assert.deepEqual(await list(node, 'user'), []);
    });

    it('when the route, kind or method is wrong, then it is 404 or 405', async () => {
      assert.equal((await request(`${node.url}/v1/nothing`)).status, 404);
      assert.equal((await request(`${node.url}/v1/whitelists/admin`)).status, 404);
      assert.equal((await request(`${node.url}/v1/whitelists/user/a/b`)).status, 404);
      assert.equal((await request(`${node.url}/v1/whitelists/admin/${A}`)).status, 404);
      assert.equal((await request(`${node.url}/v1/faults`, { method: 'POST', body: '{}' })).status, 404);
      const wrong = await request(`${node.url}/v1/whitelists/apply`);
      assert.equal(wrong.status, 405);
      assert.equal(typeof wrong.json().error, 'string');
      assert.equal((await request(`${node.url}/v1/whitelists/user`, { method: 'POST', body: '{}' })).status, 405);
      assert.equal((await request(`${node.url}/healthz`, { method: 'DELETE' })).status, 405);
    });

    it('when sent SIGTERM, then it exits 0', async () => {
      node.child.kill('SIGTERM');
      assert.deepEqual(await node.exited, { code: 0, signal: null });
    });
  });

  describe('durability', () => {
    it('when killed with SIGKILL mid-traffic, then a restart keeps every acknowledged change', async () => {
      let node = await startNode(dir);
      const acknowledged: { batchId: string; text: string; entry: string }[] = [];
      let sent = 0;
      // Four writers keep requests in flight, so the kill lands while some are half done.
      const writer = async () => {
        for (;;) {
          const i = sent++;
          const batchId = `k${i}`;
          const entry = toChecksumAddress(`0x${(i + 1).toString(16).padStart(40, '0')}`);
          try {
            const answer = await apply(node, { batchId, position: 1, changes: [add('developer', entry)] });
            if (answer.status === 200) acknowledged.push({ batchId, text: answer.text, entry });
          } catch {
            return; // connection refused or reset: the node is gone
          }
        }
      };
      const writers = [writer(), writer(), writer(), writer()];
      while (acknowledged.length < 150) await new Promise((resolve) => setTimeout(resolve, 5));
      await kill9(node);
      await Promise.all(writers);

      node = await startNode(dir);
      const entries = new Set(await list(node, 'developer'));
      for (const { entry } of acknowledged) assert.ok(entries.has(entry), `acknowledged ${entry} lost`);
      for (const { batchId, text, entry } of acknowledged.slice(-5)) {
        const again = await apply(node, { batchId, position: 1, changes: [add('developer', entry)] });
        assert.equal(again.text, text, 'a repeated batch after the restart answers as the first time');
      }
    });

    it('when restarted after SIGKILL, then each entry still knows its newest change: an older batch arriving afterwards is superseded', async () => {
      let node = await startNode(dir);
      assert.equal((await apply(node, { batchId: 'newer', position: 5, changes: [add('user', A)] })).status, 200);
      await kill9(node);
      node = await startNode(dir);
      const late = await apply(node, { batchId: 'older', position: 4, changes: [remove('user', A)] });
      assert.equal(late.json().results[0].superseded, true);
      assert.deepEqual(await list(node, 'user'), [A]);
    });
  });

  describe('the test build with faults (test/support/faulty-storage-node.ts)', () => {
    it('when started with --fault http500, then apply answers 500 and applies nothing', async () => {
      const node = await startNode(dir, ['--fault', 'http500'], FAULTY_JS);
      const answer = await apply(node, { batchId: 'f1', position: 1, changes: [add('user', A)] });
      assert.equal(answer.status, 500);
      assert.equal(typeof answer.json().error, 'string');
      assert.deepEqual(await list(node, 'user'), []);
    });

    it('when started with --fault garbage, then apply answers 200 "this is not json" and applies nothing', async () => {
      const node = await startNode(dir, ['--fault', 'garbage'], FAULTY_JS);
      const answer = await apply(node, { batchId: 'f1', position: 1, changes: [add('user', A)] });
      assert.equal(answer.status, 200);
      assert.equal(answer.text, 'this is not json');
      assert.deepEqual(await list(node, 'user'), []);
    });

    it('when started with --delay-ms, then apply is durable at once but answered late', async () => {
      const node = await startNode(dir, ['--delay-ms', '10000'], FAULTY_JS);
      // Settled into a value at once, so that its rejection (the kill) is never unhandled.
      const answer = apply(node, { batchId: 'd1', position: 1, changes: [add('user', A)] }).then(
        () => 'answered',
        () => 'no answer',
      );
      for (let i = 0; i < 100 && (await list(node, 'user')).length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 50));
      assert.deepEqual(await list(node, 'user'), [A], 'applied before the answer');
      await kill9(node);
      assert.equal(await answer, 'no answer', 'the delayed answer never came');

      const restarted = await startNode(dir);
      assert.deepEqual(await list(restarted, 'user'), [A], 'and durable');
    });

    it('when faults are changed over /v1/faults, then a running node can be made slow, failing and healthy again', async () => {
      const node = await startNode(dir, [], FAULTY_JS);
      const set = (body: unknown) => request(`${node.url}/v1/faults`, { method: 'POST', body: JSON.stringify(body) });

      assert.deepEqual((await set({ delayMs: 400 })).json(), { delayMs: 400, fault: 'none' });
      let started = Date.now();
      assert.equal((await apply(node, { batchId: 'a1', position: 1, changes: [add('user', A)] })).status, 200);
      assert.ok(Date.now() - started >= 400, 'the answer was delayed');

      assert.deepEqual((await set({ delayMs: 0, fault: 'http500' })).json(), { delayMs: 0, fault: 'http500' });
      assert.equal((await apply(node, { batchId: 'a2', position: 1, changes: [add('user', B)] })).status, 500);

      assert.equal((await set({ fault: 'none' })).status, 200);
      started = Date.now();
      assert.equal((await apply(node, { batchId: 'a2', position: 1, changes: [add('user', B)] })).status, 200);
      assert.ok(Date.now() - started < 400);
      assert.deepEqual(await list(node, 'user'), [A, B]);

      assert.equal((await set({ fault: 'slow' })).status, 400);
      assert.equal((await set({ delayMs: -1 })).status, 400);
    });

    it('when an argument is unknown or missing, then the node exits 2 with a usage message; the node itself knows no fault flag', () => {
      for (const [script, args] of [
        [MAIN_JS, ['--port', '0']],
        [MAIN_JS, ['--port', 'x', '--data', dir]],
        [MAIN_JS, ['--port', '0', '--data', dir, '--keys-file', 'k', '--fault', 'http500']],
        [MAIN_JS, ['--bogus']],
        [FAULTY_JS, ['--port', '0', '--data', dir, '--fault', 'boom']],
      ] as const) {
        const run = spawnSync(process.execPath, [script, ...args], { encoding: 'utf8' });
        assert.equal(run.status, 2, `args ${args.join(' ')}`);
        assert.deepEqual(notPinoLines(run.stdout.trimEnd().split('\n')), []);
        const line = JSON.parse(run.stdout) as { level: number; msg: string };
        assert.equal(line.level, 60);
        assert.match(line.msg, /usage: storage-node/);
        assert.equal(run.stderr, '');
      }
    });
  });
});
