import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { add, apply, kill9, killAll, list, MAIN_JS, remove, request, startNode, tempDataDir, type NodeProcess } from './node-process';

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

    it('when started, then it prints exactly one listening line and answers /healthz', async () => {
      assert.match(node.stdout(), /^storage-node listening on http:\/\/127\.0\.0\.1:\d+\n$/);
      const health = await request(`${node.url}/healthz`);
      assert.equal(health.status, 200);
      assert.deepEqual(health.json(), { ok: true });
    });

    it('when a batch adds and removes, then each result says whether it changed the set, in order', async () => {
      const answer = await apply(node, {
        batchId: 'b1',
        changes: [add('developer', B), add('developer', A), add('developer', A), remove('user', A), add('user', A), remove('user', A)],
      });
      assert.equal(answer.status, 200);
      assert.deepEqual(answer.json(), {
        batchId: 'b1',
        results: [
          { kind: 'developer', entry: B, op_type: 'add_entry', changed: true },
          { kind: 'developer', entry: A, op_type: 'add_entry', changed: true },
          { kind: 'developer', entry: A, op_type: 'add_entry', changed: false },
          { kind: 'user', entry: A, op_type: 'remove_entry', changed: false },
          { kind: 'user', entry: A, op_type: 'add_entry', changed: true },
          { kind: 'user', entry: A, op_type: 'remove_entry', changed: true },
        ],
      });
      assert.deepEqual(await request(`${node.url}/v1/whitelists/developer`).then((a) => a.json()), {
        kind: 'developer',
        entries: [A, B],
      });
      assert.deepEqual(await list(node, 'user'), []);
    });

    it('when entries differ only in case, then they are distinct entries', async () => {
      await apply(node, { batchId: 'b1', changes: [add('user', A), add('user', A.toLowerCase())] });
      assert.deepEqual(await list(node, 'user'), [A, A.toLowerCase()]);
    });

    it('when a batchId is sent again, then the first results come back and nothing is applied again', async () => {
      const first = await apply(node, { batchId: 'b1', changes: [add('user', A)] });
      await apply(node, { batchId: 'b2', changes: [remove('user', A)] });
      const repeat = await apply(node, { batchId: 'b1', changes: [add('user', A)] });
      assert.equal(repeat.status, 200);
      assert.equal(repeat.text, first.text);
      assert.deepEqual(await list(node, 'user'), []);
    });

    it('when a batchId comes again with other changes, then it is 409 and nothing is applied', async () => {
      await apply(node, { batchId: 'b1', changes: [add('user', A)] });
      const answer = await apply(node, { batchId: 'b1', changes: [add('user', B)] });
      assert.equal(answer.status, 409);
      assert.equal(typeof answer.json().error, 'string');
      assert.deepEqual(await list(node, 'user'), [A]);
    });

    it('when the body is not JSON or off-shape, then it is 400 with an error and nothing is applied', async () => {
      const url = `${node.url}/v1/whitelists/apply`;
      const bodies = [
        '',
        '{"batchId":',
        '[]',
        JSON.stringify({ changes: [add('user', A)] }),
        JSON.stringify({ batchId: '', changes: [add('user', A)] }),
        JSON.stringify({ batchId: 'x'.repeat(201), changes: [add('user', A)] }),
        JSON.stringify({ batchId: 'b', changes: {} }),
        JSON.stringify({ batchId: 'b', changes: [{ op_type: 'upsert', kind: 'user', entry: A }] }),
        JSON.stringify({ batchId: 'b', changes: [{ op_type: 'add_entry', kind: 'admin', entry: A }] }),
        JSON.stringify({ batchId: 'b', changes: [{ op_type: 'add_entry', kind: 'user', entry: '' }] }),
        JSON.stringify({ batchId: 'b', changes: [{ op_type: 'add_entry', kind: 'user', entry: 7 }] }),
        JSON.stringify({ batchId: 'b', changes: [{ ...add('user', A), extra: 1 }] }),
        JSON.stringify({ batchId: 'b', changes: [], extra: 1 }),
      ];
      for (const body of bodies) {
        const answer = await request(url, { method: 'POST', body });
        assert.equal(answer.status, 400, `body ${body.slice(0, 80)}`);
        assert.equal(typeof answer.json().error, 'string');
      }
      assert.deepEqual(await list(node, 'user'), []);
      // The rejected batchId "b" was not remembered, so it can still be used.
      assert.equal((await apply(node, { batchId: 'b', changes: [add('user', A)] })).status, 200);
    });

    it('when the body is over 1 MiB, then it is 413 and nothing is applied', async () => {
      const body = JSON.stringify({ batchId: 'big', changes: [add('user', A)], pad: 'x'.repeat(1024 * 1024) });
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
          const entry = `0x${i.toString(16).padStart(40, '0')}`;
          try {
            const answer = await apply(node, { batchId, changes: [add('developer', entry)] });
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
        const again = await apply(node, { batchId, changes: [add('developer', entry)] });
        assert.equal(again.text, text, 'a repeated batchId after the restart returns the first results');
      }
    });

    it('when the last log line is torn, then the node starts, keeps the rest and appends cleanly', async () => {
      let node = await startNode(dir);
      await apply(node, { batchId: 'b1', changes: [add('user', A)] });
      await apply(node, { batchId: 'b2', changes: [add('user', B)] });
      await kill9(node);
      const log = path.join(dir, 'batches.log');
      const intact = fs.readFileSync(log);
      fs.appendFileSync(log, '{"seq":3,"batchId":"b3","changes":[{"op_type":"remove_en');

      node = await startNode(dir);
      assert.deepEqual(await list(node, 'user'), [A, B]);
      assert.deepEqual(fs.readFileSync(log), intact, 'the torn tail is cut off the file');
      assert.equal((await apply(node, { batchId: 'b3', changes: [remove('user', A)] })).status, 200);
      await kill9(node);

      node = await startNode(dir);
      assert.deepEqual(await list(node, 'user'), [B]);
    });

    it('when a log line before the last is corrupt, then the node refuses to start', async () => {
      const node = await startNode(dir);
      await apply(node, { batchId: 'b1', changes: [add('user', A)] });
      await apply(node, { batchId: 'b2', changes: [add('user', B)] });
      await kill9(node);
      const log = path.join(dir, 'batches.log');
      const lines = fs.readFileSync(log, 'utf8').split('\n');
      lines[0] = lines[0].slice(0, 20);
      fs.writeFileSync(log, lines.join('\n'));

      await assert.rejects(startNode(dir), /corrupt record/);
    });

    it('when the log is compacted, then a restart keeps the state and the remembered batchIds', async () => {
      let node = await startNode(dir, ['--compact-after-batches', '5']);
      const first: Record<string, string> = {};
      for (let i = 0; i < 12; i++) {
        const answer = await apply(node, { batchId: `c${i}`, changes: [add('user', `e${i}`), remove('user', `e${i - 1}`)] });
        first[`c${i}`] = answer.text;
      }
      assert.ok(fs.existsSync(path.join(dir, 'snapshot.json')), 'a snapshot was written');
      const logLines = fs.readFileSync(path.join(dir, 'batches.log'), 'utf8').split('\n').filter(Boolean);
      assert.equal(logLines.length, 2, 'the log restarted after the last compaction (at batch 10)');
      await kill9(node);

      node = await startNode(dir, ['--compact-after-batches', '5']);
      assert.deepEqual(await list(node, 'user'), ['e11']);
      const repeat = await apply(node, { batchId: 'c1', changes: [add('user', 'e1'), remove('user', 'e0')] });
      assert.equal(repeat.text, first.c1, 'a batchId from before the snapshot returns its first results');
      assert.deepEqual(await list(node, 'user'), ['e11'], 'and is not applied again');
      assert.equal((await apply(node, { batchId: 'c1', changes: [add('user', 'e99')] })).status, 409);
    });
  });

  describe('fault hooks', () => {
    it('when started with --fault http500, then apply answers 500 and applies nothing', async () => {
      const node = await startNode(dir, ['--fault', 'http500']);
      const answer = await apply(node, { batchId: 'f1', changes: [add('user', A)] });
      assert.equal(answer.status, 500);
      assert.equal(typeof answer.json().error, 'string');
      assert.deepEqual(await list(node, 'user'), []);
    });

    it('when started with --fault garbage, then apply answers 200 "this is not json" and applies nothing', async () => {
      const node = await startNode(dir, ['--fault', 'garbage']);
      const answer = await apply(node, { batchId: 'f1', changes: [add('user', A)] });
      assert.equal(answer.status, 200);
      assert.equal(answer.text, 'this is not json');
      assert.deepEqual(await list(node, 'user'), []);
    });

    it('when started with --delay-ms, then apply is durable at once but answered late', async () => {
      const node = await startNode(dir, ['--delay-ms', '10000']);
      // Settled into a value at once, so that its rejection (the kill) is never unhandled.
      const answer = apply(node, { batchId: 'd1', changes: [add('user', A)] }).then(
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

    it('when the fault API is enabled, then a running node can be made slow, failing and healthy again', async () => {
      const node = await startNode(dir, ['--enable-fault-api']);
      const set = (body: unknown) => request(`${node.url}/v1/faults`, { method: 'POST', body: JSON.stringify(body) });

      assert.deepEqual((await set({ delayMs: 400 })).json(), { delayMs: 400, fault: 'none' });
      let started = Date.now();
      assert.equal((await apply(node, { batchId: 'a1', changes: [add('user', A)] })).status, 200);
      assert.ok(Date.now() - started >= 400, 'the answer was delayed');

      assert.deepEqual((await set({ delayMs: 0, fault: 'http500' })).json(), { delayMs: 0, fault: 'http500' });
      assert.equal((await apply(node, { batchId: 'a2', changes: [add('user', B)] })).status, 500);

      assert.equal((await set({ fault: 'none' })).status, 200);
      started = Date.now();
      assert.equal((await apply(node, { batchId: 'a2', changes: [add('user', B)] })).status, 200);
      assert.ok(Date.now() - started < 400);
      assert.deepEqual(await list(node, 'user'), [A, B]);

      assert.equal((await set({ fault: 'slow' })).status, 400);
      assert.equal((await set({ delayMs: -1 })).status, 400);
    });

    it('when an argument is unknown or missing, then the node exits 2 with a usage message', () => {
      for (const args of [
        ['--port', '0'],
        ['--port', 'x', '--data', dir],
        ['--port', '0', '--data', dir, '--fault', 'boom'],
        ['--bogus'],
      ]) {
        const run = spawnSync(process.execPath, [MAIN_JS, ...args], { encoding: 'utf8' });
        assert.equal(run.status, 2, `args ${args.join(' ')}`);
        assert.match(run.stderr, /usage: storage-node/);
        assert.equal(run.stdout, '');
      }
    });
  });
});
