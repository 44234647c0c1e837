import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities } from '../../activities';
import { toChecksumAddress } from '../../domain/eoa';
import type { WhitelistChange } from '../../domain/whitelist-messages';
import { startStorageNode, type StorageNodeProcess } from '../../scripts/lib/storage-nodes';
import { TokenStore, createToken } from '../../tokens/token-store';
import type { FirstRoundInput, FirstRoundResult } from '../../contracts/temporal';
import { testNodeKeysFile, testNodeTransport } from '../support/node-keys';
import { randomEoa } from '../support/whitelists';

// The batch's precheck and first round as one activity, run the way Temporal's SDK
// unit-tests an activity (MockActivityEnvironment), against a real storage node process and a
// real token file.
describe('activity: precheckAndFirstRound (real token file, real storage node)', function () {
  this.timeout(60_000);
  let dir: string;
  let node: StorageNodeProcess;
  let counter: Server;
  let counterUrl: string;
  let counted = 0;
  let second: StorageNodeProcess;
  let silent: Server;
  let silentUrl: string;
  let activities: ReturnType<typeof createActivities>;

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'precheck-first-round-'));
    const tokens = path.join(dir, 'tokens.json');
    createToken(tokens, 'developers-only', ['whitelist:developer:*']);
    node = await startStorageNode('activity-node', { port: 0, dataDir: path.join(dir, 'node'), keysFile: testNodeKeysFile(), echo: false });
    // A "node" that only counts what reaches it: a refused token must reach no node.
    counter = createServer((req, res) => {
      counted++;
      res.writeHead(500).end();
    });
    await new Promise<void>((resolve) => counter.listen(0, '127.0.0.1', resolve));
    counterUrl = `http://127.0.0.1:${(counter.address() as AddressInfo).port}`;
    second = await startStorageNode('activity-node-2', {
      port: 0,
      dataDir: path.join(dir, 'node-2'),
      keysFile: testNodeKeysFile(),
      echo: false,
    });
    // A replica that takes its requests and never answers.
    silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    silentUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    activities = createActivities({ tokens: new TokenStore(tokens), nodeRequestTimeoutMs: 5_000, nodeTransport: testNodeTransport() });
  });
  after(async () => {
    await node?.stop(2000);
    await second?.stop(2000);
    counter?.close();
    silent?.closeAllConnections();
    silent?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const change = (kind: WhitelistChange['kind']): WhitelistChange => ({
    op_type: 'add_entry',
    kind,
    entry: toChecksumAddress(randomEoa()),
  });
  const input = (changes: WhitelistChange[], perNode: FirstRoundInput['perNode']): FirstRoundInput => ({
    batchId: `batch-${Date.now()}-${Math.random()}`,
    position: Date.now(),
    tokenId: 'developers-only',
    changes,
    perNode,
    deadlineAt: Date.now() + 5_000,
    attempts: 3,
    backoffMs: 50,
  });

  it('when the token lacks the scope of one change, then it answers forbidden and no node is asked', async () => {
    const changes = [change('developer'), change('user')];
    const result = await new MockActivityEnvironment().run(
      activities.precheckAndFirstRound,
      input(changes, [{ node: counterUrl, indexes: [0, 1] }]),
    );
    assert.deepEqual(result, { status: 'forbidden', message: 'token lacks the scope for add_entry on the user whitelist' });
    assert.equal(counted, 0);
  });

  it('when the token covers every change, then each node gets its share (by index) and the answers come back per node', async () => {
    // Changes 0 and 2 add the same entry: the node applies its share in batch order (each change
    // carries its index in the batch), so the first changes the list and the second does not.
    const twice = change('developer');
    const changes = [twice, change('developer'), { ...twice }];
    const result: FirstRoundResult = await new MockActivityEnvironment().run(
      activities.precheckAndFirstRound,
      input(changes, [
        { node: node.url, indexes: [0, 2] },
        { node: counterUrl, indexes: [1] },
      ]),
    );
    assert.equal(result.status, 'ran');
    if (result.status !== 'ran') return;
    // Only the flags come back, in the share's order (decision 0017).
    assert.deepEqual(result.nodes[node.url], { status: 'applied', changed: [true, false], superseded: [false, false] });
    // The counting node answers 500: refused for good, and known not to have applied.
    assert.deepEqual(
      { ...result.nodes[counterUrl], message: undefined },
      {
        status: 'failed',
        type: 'NodeRejected',
        message: undefined,
        maybeApplied: false,
      },
    );
    assert.equal(counted, 1, 'a refusal is not retried');
  });
  it("when a majority of each change's replicas applied it and the third does not answer, then the round ends a short grace later with the third late and maybe applied", async () => {
    const changes = [change('developer')];
    const started = performance.now();
    const result: FirstRoundResult = await new MockActivityEnvironment().run(activities.precheckAndFirstRound, {
      ...input(changes, [
        { node: node.url, indexes: [0] },
        { node: second.url, indexes: [0] },
        { node: silentUrl, indexes: [0] },
      ]),
      quorum: [2],
    });
    const tookMs = performance.now() - started;
    assert.equal(result.status, 'ran');
    if (result.status !== 'ran') return;
    assert.equal(result.nodes[node.url].status, 'applied');
    assert.equal(result.nodes[second.url].status, 'applied');
    assert.deepEqual(result.nodes[silentUrl], {
      status: 'late',
      message: `${silentUrl}: not waited for past a majority`,
      maybeApplied: true,
    });
    assert.ok(tookMs < 1000, `answered at the majority, not at the 5 s deadline (${Math.round(tookMs)} ms)`);
  });
});
