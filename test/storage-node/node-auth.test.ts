import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { getJson, postJson } from '../../activities/http-post';
import { createNodeTransport } from '../../activities/node-transport';
import { probeStorageNodes } from '../../api/whitelists/node-health';
import { StorageNodeReads } from '../../api/whitelists/node-reads';
import { createNodeKeysFile, readNodeKeysFile } from '../../lib/node-keys-file';
import { ROUTES } from '../../contracts/storage-node-protocol';
import { generateNodeKey, parseNodeKeys } from '../../lib/node-request-auth';
import { signedHeaders, testNodeKeys, testNodeKeysFile, testNodeTransport } from '../support/node-keys';
import { FAULTS_ROUTE } from '../support/faulty-storage-node';
import { add, apply, FAULTY_JS, kill9, killAll, list, MAIN_JS, request, startNode, tempDataDir, type NodeProcess } from './node-process';

const A = '0x52908400098527886E0F7030069857D2E4169EE7';
/** The attack of the report, byte for byte: a forged apply from anyone who can reach a node. */
const EVIL_BODY =
  '{"batchId":"evil-1","tokenId":"wl-admin","changes":[{"op_type":"add_entry","kind":"developer","entry":"not-even-an-address"}]}';

/**
 * One request on plain node:http, with exactly the headers given (as curl would send it), on a
 * connection of its own: never a pooled one that a killed node left behind.
 */
function rawRequest(
  url: string,
  method: string,
  body?: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method, agent: false, headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers } },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const isErrorBody = (text: string) => typeof JSON.parse(text).error === 'string';

describe('storage node authentication (real node processes)', function () {
  this.timeout(30_000);
  let dir: string;
  beforeEach(() => {
    dir = tempDataDir();
  });
  afterEach(async () => {
    await killAll();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  describe('a node started with a keys file', () => {
    let node: NodeProcess;
    beforeEach(async () => {
      node = await startNode(dir, [], FAULTY_JS);
    });

    it('when the forged apply of the report is POSTed unsigned, then it is 401 and nothing is applied or audited', async () => {
      const answer = await rawRequest(`${node.url}${ROUTES.apply}`, 'POST', EVIL_BODY);
      assert.equal(answer.status, 401, answer.text);
      assert.ok(isErrorBody(answer.text), answer.text);
      assert.deepEqual(await list(node, 'developer'), []);
      const audit = await request(`${node.url}${ROUTES.audit}`);
      assert.equal(audit.status, 200, audit.text);
      assert.deepEqual(audit.json().records, [], 'nothing logged as applied');
      // The same body signed by the service is applied: the 401 was the signature's doing.
      assert.equal((await apply(node, { batchId: 'good-1', position: 1, changes: [add('developer', A)] })).status, 200);
      assert.deepEqual(await list(node, 'developer'), [A]);
      assert.match(node.stdout(), /"msg":"refused 1 request\(s\) not signed with this deployment's key/);
    });

    it('when any route is called unsigned, then it is 401 before routing (even an unknown path)', async () => {
      for (const [method, route] of [
        ['GET', '/v1/whitelists/developer'],
        ['GET', `/v1/whitelists/developer/${A}`],
        ['GET', '/v1/whitelists/audit?kind=developer'],
        ['GET', ROUTES.health],
        ['GET', FAULTS_ROUTE],
        ['POST', FAULTS_ROUTE],
        ['GET', '/v1/nothing'],
      ]) {
        const answer = await rawRequest(`${node.url}${route}`, method, method === 'POST' ? '{"fault":"http500"}' : undefined);
        assert.equal(answer.status, 401, `${method} ${route}: ${answer.text}`);
        assert.ok(isErrorBody(answer.text));
      }
      assert.deepEqual(
        (await request(`${node.url}${FAULTS_ROUTE}`)).json(),
        { delayMs: 0, fault: 'none' },
        'the unsigned fault change did nothing',
      );
    });

    it('when a request is signed with another key, is stale, or its signed copy is sent again, then it is 401', async () => {
      const url = `${node.url}${ROUTES.apply}`;
      const body = JSON.stringify({ batchId: 'b1', position: 1, changes: [add('user', A)] });
      const otherKeys = createNodeTransport({ keys: parseNodeKeys(generateNodeKey()) });
      assert.equal((await postJson(url, body, { timeoutMs: 5_000, transport: otherKeys })).status, 401);

      const stale = { ...signedHeaders('POST', url, body), 'x-node-auth-timestamp': String(Math.floor(Date.now() / 1000) - 600) };
      assert.equal((await rawRequest(url, 'POST', body, stale)).status, 401);

      const headers = signedHeaders('POST', url, body);
      assert.equal((await rawRequest(url, 'POST', body, headers)).status, 200);
      const replay = await rawRequest(url, 'POST', body, headers);
      assert.equal(replay.status, 401);
      assert.match(JSON.parse(replay.text).error, /replayed/);

      const tampered = await rawRequest(url, 'POST', body.replace('b1', 'b2'), signedHeaders('POST', url, body));
      assert.equal(tampered.status, 401);
      assert.deepEqual(await list(node, 'user'), [A], 'only the one signed, fresh request was applied');
    });

    it('when the node holds the old and the new key, then requests signed with either are served (rotation)', async () => {
      await killAll();
      const keysFile = path.join(dir, 'rotated-keys');
      const next = generateNodeKey();
      // The new key first (it signs), the old one after: what the nodes hold mid-rotation.
      fs.writeFileSync(keysFile, `${next}\n${fs.readFileSync(testNodeKeysFile(), 'utf8')}`);
      const rotated = await startNode(dir, ['--keys-file', keysFile]);
      const health = `${rotated.url}${ROUTES.health}`;
      assert.equal(
        (await getJson(health, { timeoutMs: 5_000, transport: testNodeTransport() })).status,
        200,
        'a service still on the old key',
      );
      const onNewKey = createNodeTransport({ keys: readNodeKeysFile(keysFile) });
      assert.equal((await getJson(health, { timeoutMs: 5_000, transport: onNewKey })).status, 200, 'a service already on the new key');
    });
  });

  describe('a request is bound to the node it was signed for', () => {
    it('when a request signed for one node is sent to another, then that node refuses it (401) and applies nothing', async () => {
      const other = tempDataDir();
      try {
        const [first, second] = await Promise.all([startNode(dir), startNode(other)]);
        const body = JSON.stringify({ batchId: 'b1', position: 1, changes: [add('user', A)] });
        const headers = signedHeaders('POST', `${first.url}${ROUTES.apply}`, body);
        const stray = await rawRequest(`${second.url}${ROUTES.apply}`, 'POST', body, headers);
        assert.equal(stray.status, 401, stray.text);
        assert.deepEqual(await list(second, 'user'), [], 'no stray copy on the second node');
        assert.equal((await rawRequest(`${first.url}${ROUTES.apply}`, 'POST', body, headers)).status, 200, 'the node it was signed for');
      } finally {
        fs.rmSync(other, { recursive: true, force: true });
      }
    });

    it('when a node restarts (even killed), then a request it accepted before is still refused as a replay', async () => {
      const node = await startNode(dir);
      const url = `${node.url}${ROUTES.apply}`;
      const body = JSON.stringify({ batchId: 'b1', position: 1, changes: [add('user', A)] });
      const headers = signedHeaders('POST', url, body);
      assert.equal((await rawRequest(url, 'POST', body, headers)).status, 200);
      await kill9(node);
      const again = await startNode(dir, ['--port', new URL(node.url).port]);
      assert.equal(again.url, node.url, 'the same address, so only the remembered id can refuse it');
      const replay = await rawRequest(url, 'POST', body, headers);
      assert.equal(replay.status, 401, replay.text);
      assert.match(JSON.parse(replay.text).error, /replayed/);
    });

    it('when its replay memory is full, then a signed request is 503 and the log says so, not that it was unsigned', async () => {
      const node = await startNode(dir, ['--remember-request-ids', '2']);
      const url = `${node.url}${ROUTES.health}`;
      for (const expected of [200, 200, 503])
        assert.equal((await rawRequest(url, 'GET', undefined, signedHeaders('GET', url))).status, expected);
      // The line reaches this process through the node's stdout pipe, after the answer.
      const line = /"msg":"refused 1 request\(s\) signed, but answered 503: the replay memory holds 2 live ids, all taken/;
      for (const until = Date.now() + 5000; !line.test(node.stdout()) && Date.now() < until;)
        await new Promise((resolve) => setTimeout(resolve, 20));
      assert.match(node.stdout(), line);
      assert.doesNotMatch(node.stdout(), /not signed/);
    });

    it('when the node is given --public-url, then it takes requests signed for that address and refuses ones signed for its bound one', async () => {
      const node = await startNode(dir, ['--public-url', 'https://node-a.example.net:8443/']);
      const body = JSON.stringify({ batchId: 'b1', position: 1, changes: [add('user', A)] });
      const forPublic = signedHeaders('POST', `https://node-a.example.net:8443${ROUTES.apply}`, body);
      const forBound = signedHeaders('POST', `${node.url}${ROUTES.apply}`, body);
      assert.equal((await rawRequest(`${node.url}${ROUTES.apply}`, 'POST', body, forBound)).status, 401);
      assert.equal((await rawRequest(`${node.url}${ROUTES.apply}`, 'POST', body, forPublic)).status, 200);
    });
  });

  describe('start-up', () => {
    it('when started without --keys-file, then it exits 2 saying it accepts only signed requests', () => {
      const run = spawnSync(process.execPath, [MAIN_JS, '--port', '0', '--data', dir], { encoding: 'utf8' });
      assert.equal(run.status, 2);
      assert.match(run.stdout, /"level":60,.*--keys-file is required: the node accepts only requests signed/);
      assert.equal(run.stderr, '');
    });

    it('when it listens on every interface without --public-url, then it exits 2 saying which address to sign for is unknown', () => {
      const run = spawnSync(
        process.execPath,
        [MAIN_JS, '--port', '0', '--data', dir, '--keys-file', testNodeKeysFile(), '--host', '0.0.0.0'],
        {
          encoding: 'utf8',
          timeout: 10_000,
        },
      );
      assert.equal(run.status, 2, run.stdout);
      assert.match(run.stdout, /"level":60,.*--public-url is required/);
    });

    it('when the keys file is missing or holds no key, then it exits 1 naming the file', () => {
      const missing = path.join(dir, 'no-such-keys');
      const empty = path.join(dir, 'empty-keys');
      fs.writeFileSync(empty, '# nothing yet\n');
      for (const [file, message] of [
        [missing, /cannot read the storage node keys file .*no-such-keys/],
        [empty, /empty-keys holds no key/],
      ] as const) {
        const run = spawnSync(process.execPath, [MAIN_JS, '--port', '0', '--data', dir, '--keys-file', file], { encoding: 'utf8' });
        assert.equal(run.status, 1, run.stdout);
        assert.match(run.stdout, message);
      }
    });

    it('when the keys file is created, then it is 0600 with one key, and creating it again keeps it', () => {
      const file = path.join(dir, 'sub', 'storage-node-keys');
      assert.equal(createNodeKeysFile(file), true);
      assert.equal(fs.statSync(file).mode & 0o777, 0o600);
      const first = fs.readFileSync(file, 'utf8');
      assert.match(first, /^whsec_[A-Za-z0-9+/]{43}=\n$/);
      assert.equal(createNodeKeysFile(file), false);
      assert.equal(fs.readFileSync(file, 'utf8'), first, 'never overwritten');
      assert.deepEqual(fs.readdirSync(path.dirname(file)), ['storage-node-keys'], 'no temporary file left');
    });
  });

  describe('https with a configured CA', () => {
    let tls: string;
    before(() => {
      // A throwaway CA and a certificate for 127.0.0.1 signed by it, as an operator's own CA would issue.
      tls = tempDataDir();
      const openssl = (...args: string[]) => execFileSync('/usr/bin/openssl', args, { cwd: tls, stdio: 'pipe' });
      const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
      openssl('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '1', '-subj', '/CN=test node CA');
      openssl('req', '-new', ...ec, '-keyout', 'node.key', '-out', 'node.csr', '-subj', '/CN=storage node');
      fs.writeFileSync(path.join(tls, 'ext.cnf'), 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
      openssl(
        'x509',
        '-req',
        '-in',
        'node.csr',
        '-CA',
        'ca.pem',
        '-CAkey',
        'ca.key',
        '-set_serial',
        '1',
        '-out',
        'node.pem',
        '-days',
        '1',
        '-extfile',
        'ext.cnf',
      );
    });
    after(() => fs.rmSync(tls, { recursive: true, force: true }));

    it('when the node serves https, then clients trusting the CA apply, read and probe; others cannot connect', async () => {
      const node = await startNode(dir, ['--tls-cert', path.join(tls, 'node.pem'), '--tls-key', path.join(tls, 'node.key')]);
      assert.match(node.url, /^https:\/\/127\.0\.0\.1:\d+$/);
      const transport = createNodeTransport({ keys: testNodeKeys(), ca: fs.readFileSync(path.join(tls, 'ca.pem')) });

      const body = JSON.stringify({ batchId: 'tls-1', position: 1, changes: [add('developer', A)] });
      const applied = await postJson(`${node.url}${ROUTES.apply}`, body, { timeoutMs: 5_000, transport });
      assert.equal(applied.status, 200, applied.text);
      assert.deepEqual((await new StorageNodeReads(5_000, transport, (n) => n).list(node.url, 'developer', undefined, 10)).entries, [A]);
      assert.deepEqual(await probeStorageNodes([node.url], transport), { [node.url]: 'up' });

      // The system roots do not know this CA: the connection fails before anything is sent.
      await assert.rejects(
        getJson(`${node.url}${ROUTES.health}`, { timeoutMs: 5_000, transport: testNodeTransport() }),
        (err: NodeJS.ErrnoException) => /CERT|SIGNATURE|ISSUER/.test(err.code ?? ''),
      );
      assert.deepEqual(await probeStorageNodes([node.url], testNodeTransport()), { [node.url]: 'down' });
    });
  });
});
