import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createStorageNodeServer } from '../../storage-node/server';
import { faultyApply } from '../support/faulty-storage-node';
import { signedHeaders, testNodeKeys } from '../support/node-keys';
import { add, tempDataDir } from './node-process';

describe('storage node server (in-process)', () => {
  let dir: string;
  beforeEach(() => {
    dir = tempDataDir();
  });
  afterEach(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('when the server runs in-process, then it binds, reports its address and closes', async () => {
    const node = createStorageNodeServer({ dataDir: dir, keys: testNodeKeys(), onError: (err) => assert.fail(err) });
    assert.equal(node.address(), undefined);
    const bound = await node.listen(0);
    assert.equal(bound.host, '127.0.0.1');
    assert.deepEqual(node.address(), bound);
    const body = JSON.stringify({ batchId: 'b1', position: 1, changes: [add('developer', '0x52908400098527886E0F7030069857D2E4169EE7')] });
    const answer = await fetch(`${bound.url}/v1/whitelists/apply`, {
      method: 'POST',
      headers: signedHeaders('POST', `${bound.url}/v1/whitelists/apply`, body),
      body,
    });
    assert.equal(answer.status, 200);
    await node.close();
    await assert.rejects(fetch(`${bound.url}/healthz`));
  });

  it('when an in-process node is closed during a delayed answer, then close does not wait for the delay', async () => {
    const node = createStorageNodeServer({
      dataDir: dir,
      keys: testNodeKeys(),
      answerApply: faultyApply({ delayMs: 60_000, fault: 'none' }),
      onError: () => undefined,
    });
    const { url } = await node.listen(0);
    const body = JSON.stringify({ batchId: 'b1', position: 1, changes: [add('developer', '0x52908400098527886E0F7030069857D2E4169EE7')] });
    const pending = fetch(`${url}/v1/whitelists/apply`, {
      method: 'POST',
      headers: signedHeaders('POST', `${url}/v1/whitelists/apply`, body),
      body,
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    // Watched before the close, which drops the connection while it still stops the node's thread.
    const refused = assert.rejects(pending);
    const started = Date.now();
    await node.close();
    assert.ok(Date.now() - started < 1_000);
    await refused;
  });
});
