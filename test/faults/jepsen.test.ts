import assert from 'node:assert/strict';
import fs from 'node:fs';
import { toChecksumAddress } from '../../domain/eoa';
import type { WhitelistChange } from '../../domain/whitelist-messages';
import {
  WHITELIST_REPAIR_WORKFLOW_TYPE,
  whitelistBatchWorkflowId,
  whitelistRepairWorkflowId,
  type WhitelistBatchResult,
  type WhitelistRepairResult,
} from '../../contracts/temporal';
import { freePort } from '../support/ports';
import { request } from '../support/http';
import { ProcessStack } from '../support/process-stack';
import { TcpProxy } from '../support/tcp-proxy';
import { nodeEntries, randomEoa } from '../support/whitelists';

const CLIENTS = 4;
const ENTRIES = Array.from({ length: 6 }, () => toChecksumAddress(randomEoa()));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Write {
  batchId?: string;
  status: number;
  changes: WhitelistChange[];
}
interface Read {
  entry: string;
  listed: boolean;
}

/**
 * Whether a client's reads of one entry never went back: each read must be explained by a prefix
 * of the entry's accepted changes in the one order (its state after the k-th change), with k never
 * falling from one read to the next. Greedy: the smallest k that explains each read.
 */
function monotonic(reads: readonly boolean[], states: readonly boolean[]): boolean {
  let k = 0;
  for (const listed of reads) {
    while (k < states.length && states[k] !== listed) k++;
    if (k === states.length) return false;
  }
  return true;
}

// A Jepsen-style test of the project's own: real storage nodes behind TCP proxies (the service
// reaches them only through these), three copies of each entry, concurrent adds and removes of a
// few entries from several clients while a nemesis partitions nodes, kills them and wipes one.
describe('faults: Jepsen-style, three copies under partitions, kills and a wipe (real processes behind proxies)', function () {
  this.timeout(600_000);
  let stack: ProcessStack;
  const proxies: TcpProxy[] = [];

  before(async function () {
    this.timeout(120_000);
    const nodePorts = [await freePort(), await freePort(), await freePort()];
    for (const port of nodePorts) proxies.push(await new TcpProxy(await freePort(), { host: '127.0.0.1', port }).start());
    stack = await new ProcessStack({
      env: { STORAGE_REPLICAS: '3', STORAGE_NODES: proxies.map((p) => p.url).join(','), WHITELIST_REPAIR_INTERVAL_S: '5' },
      // Each node takes requests signed for its own address (the test's reads) and for its proxy's (the service's).
      nodes: nodePorts.map((port, i) => ({
        port,
        extraArgs: ['--public-url', `http://127.0.0.1:${port}`, '--public-url', proxies[i].url],
      })),
    }).start();
  });
  after(async () => {
    await stack?.stop();
    for (const proxy of proxies) await proxy.stop();
  });

  it('when clients add and remove the same entries while nodes are partitioned, killed and one wiped, then every entry ends as the last accepted change in the order, and no client ever read an older state than before', async () => {
    const writes: Write[][] = Array.from({ length: CLIENTS }, () => []);
    const reads: Read[][] = Array.from({ length: CLIENTS }, () => []);
    let running = true;
    const client = async (c: number) => {
      let n = 0;
      while (running) {
        n++;
        const picked = [...ENTRIES].sort(() => Math.random() - 0.5).slice(0, 1 + (n % 3));
        const changes = picked.map((entry): WhitelistChange => ({
          op_type: Math.random() < 0.5 ? 'add_entry' : 'remove_entry',
          kind: 'user',
          entry,
        }));
        const res = await request(stack.apiUrl, 'POST', '/chain/whitelists/', {
          json: changes,
          token: stack.token,
          headers: { timeout: '2000' },
        });
        writes[c].push({ batchId: res.headers.get('x-batch-id') ?? undefined, status: res.status, changes });
        for (const entry of [...ENTRIES].sort(() => Math.random() - 0.5).slice(0, 2)) {
          const read = await request(stack.apiUrl, 'GET', `/chain/whitelists/user/${entry}`, { token: stack.token });
          if (read.status === 200) reads[c].push({ entry, listed: read.body.result.listed });
          else assert.equal(read.status, 503, read.text);
        }
        await sleep(20 + Math.random() * 80);
      }
    };
    const clients = Array.from({ length: CLIENTS }, (_, c) => client(c));

    // The nemesis, one step after another.
    const kill = async (i: number) => {
      stack.nodes[i].child.kill('SIGKILL');
      await stack.nodes[i].exited;
    };
    try {
      await sleep(3000);
      proxies[0].partition();
      await sleep(6000);
      proxies[0].heal();
      await kill(1);
      await sleep(6000);
      await stack.restartNode(1);
      proxies[1].partition();
      proxies[2].partition(); // a majority cut off: writes 408, reads 503
      await sleep(5000);
      proxies[1].heal();
      proxies[2].heal();
      await sleep(2000);
      await kill(2); // its disk is lost
      fs.rmSync(stack.nodeDataDir(2), { recursive: true, force: true });
      await sleep(3000);
      await stack.restartNode(2);
      proxies[0].partition(); // while node 3 is being refilled
      await sleep(5000);
      proxies[0].heal();
      await sleep(4000);
    } finally {
      running = false;
      for (const proxy of proxies) proxy.heal();
      await Promise.all(clients);
    }

    // Every batch ends (applied everywhere, or reverted), and one pass leaves every replica alike.
    const all = writes.flat();
    const accepted: Array<{ position: number; batchId: string; changes: WhitelistChange[] }> = [];
    for (const write of all) {
      if (write.batchId === undefined) continue;
      const handle = stack.client.workflow.getHandle(whitelistBatchWorkflowId(write.batchId));
      let result: WhitelistBatchResult;
      try {
        result = (await handle.result()) as WhitelistBatchResult;
      } catch {
        continue; // never started
      }
      if (write.status === 200) assert.equal(result.outcome?.status, 200);
      if (result.outcome?.status === 200 || result.outcome?.status === 408)
        accepted.push({ position: (await handle.describe()).startTime.getTime(), batchId: write.batchId, changes: write.changes });
    }
    const pass: WhitelistRepairResult = await stack.client.workflow.execute(WHITELIST_REPAIR_WORKFLOW_TYPE, {
      workflowId: whitelistRepairWorkflowId(stack.taskQueue, `jepsen-${Date.now()}`),
      taskQueue: stack.taskQueue,
      args: [],
    });
    assert.deepEqual(pass.unreachable, []);

    // Each entry's accepted changes in the one order: position, batch id, index in the batch.
    const history = new Map<string, boolean[]>(ENTRIES.map((e) => [e, [false]]));
    const ordered = accepted.flatMap(({ position, batchId, changes }) =>
      changes.map((change, index) => ({ position, batchId, index, change })),
    );
    ordered.sort((a, b) => a.position - b.position || (a.batchId < b.batchId ? -1 : a.batchId > b.batchId ? 1 : 0) || a.index - b.index);
    for (const { change } of ordered) history.get(change.entry)!.push(change.op_type === 'add_entry');

    const held = await Promise.all(stack.nodes.map((node) => nodeEntries(node.url, 'user')));
    for (const entry of ENTRIES) {
      const expected = history.get(entry)!.at(-1);
      const answer = await request(stack.apiUrl, 'GET', `/chain/whitelists/user/${entry}`, { token: stack.token });
      assert.equal(answer.body?.result?.listed, expected, `${entry}: the last accepted change`);
      held.forEach((list, i) => assert.equal(list.includes(entry), expected, `${entry} on node ${i + 1}`));
      for (const [c, clientReads] of reads.entries()) {
        const seen = clientReads.filter((r) => r.entry === entry).map((r) => r.listed);
        assert.ok(
          monotonic(seen, history.get(entry)!),
          `client ${c} read ${entry} going back: ${JSON.stringify(seen)} against ${JSON.stringify(history.get(entry))}`,
        );
      }
    }
    const statuses = all.reduce<Record<number, number>>((counts, w) => ({ ...counts, [w.status]: (counts[w.status] ?? 0) + 1 }), {});
    const readCount = reads.flat().length;
    assert.ok(
      all.length >= 40 && readCount >= 40,
      `enough happened: ${all.length} batches ${JSON.stringify(statuses)}, ${readCount} reads`,
    );
    assert.ok((statuses[200] ?? 0) > 0 && (statuses[408] ?? 0) > 0, `both answers seen: ${JSON.stringify(statuses)}`);
  });
});
