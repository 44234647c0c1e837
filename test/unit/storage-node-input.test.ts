import assert from 'node:assert/strict';
import path from 'node:path';
import { ServiceError } from '../../domain/errors';
import { parseStorageNodeArgs } from '../../storage-node/config';
import { parseApplyRequest } from '../../storage-node/validate';
import { parseFaultArgs, parseFaultUpdate } from '../support/faulty-storage-node';

const badRequest = (err: unknown) => err instanceof ServiceError && err.status === 400;

describe('storage node input parsing', () => {
  describe('apply body', () => {
    it('when the body is well formed, then it comes back typed with only the known fields', () => {
      const body = {
        batchId: 'b1',
        position: 3,
        changes: [{ op_type: 'remove_entry', kind: 'developer', entry: '0x52908400098527886E0F7030069857D2E4169EE7' }],
      };
      assert.deepEqual(parseApplyRequest(body), body);
    });

    it('when changes is empty, then it is accepted', () => {
      assert.deepEqual(parseApplyRequest({ batchId: 'b', position: 0, changes: [] }), { batchId: 'b', position: 0, changes: [] });
    });

    it('when a field is missing, mistyped, out of range or unknown, then it is a 400', () => {
      const change = { op_type: 'add_entry', kind: 'user', entry: '0x52908400098527886E0F7030069857D2E4169EE7' };
      for (const body of [
        null,
        'text',
        [],
        { changes: [change] },
        { batchId: 7, changes: [change] },
        { batchId: 'x'.repeat(201), changes: [change] },
        { batchId: 'b' },
        { batchId: 'b', changes: [null] },
        { batchId: 'b', changes: [{ ...change, op_type: 'ADD_ENTRY' }] },
        { batchId: 'b', changes: [{ ...change, kind: 'users' }] },
        { batchId: 'b', changes: [{ ...change, entry: 'x'.repeat(257) }] },
        { batchId: 'b', changes: [{ ...change, note: 'hi' }] },
        { batchId: 'b', position: 1, changes: [change], deadline: 5 },
        { batchId: 'b', changes: [change] },
        { batchId: 'b', position: '1', changes: [change] },
        { batchId: 'b', position: 1, changes: [{ ...change, entry: 'not-even-an-address' }] },
      ]) {
        assert.throws(() => parseApplyRequest(body), badRequest, JSON.stringify(body));
      }
    });

    it('when batchId is exactly 200 characters, then it is accepted', () => {
      assert.equal(parseApplyRequest({ batchId: 'x'.repeat(200), position: 1, changes: [] }).batchId.length, 200);
    });
  });

  describe('fault update', () => {
    const current = { delayMs: 100, fault: 'none' as const };

    it('when only one setting is sent, then the other keeps its value', () => {
      assert.deepEqual(parseFaultUpdate({ fault: 'garbage' }, current), { delayMs: 100, fault: 'garbage' });
      assert.deepEqual(parseFaultUpdate({ delayMs: 0 }, current), { delayMs: 0, fault: 'none' });
    });

    it('when a setting is out of range or unknown, then it is a 400', () => {
      for (const body of [{ delayMs: -1 }, { delayMs: 1.5 }, { delayMs: '10' }, { fault: 'slow' }, { other: 1 }, []]) {
        assert.throws(() => parseFaultUpdate(body, current), badRequest, JSON.stringify(body));
      }
    });
  });

  describe("the test build's fault flags", () => {
    it("when fault flags are mixed with the node's, then they are taken out and the rest is the node's command line", () => {
      assert.deepEqual(parseFaultArgs(['--port', '0', '--fault', 'http500', '--data', 'd', '--delay-ms=250']), {
        faults: { delayMs: 250, fault: 'http500' },
        nodeArgs: ['--port', '0', '--data', 'd'],
      });
      assert.deepEqual(parseFaultArgs(['--port', '0']), { faults: { delayMs: 0, fault: 'none' }, nodeArgs: ['--port', '0'] });
    });

    it('when a fault flag is unknown or out of range, then parsing throws', () => {
      for (const args of [
        ['--fault', 'slow'],
        ['--delay-ms', 'soon'],
        ['--delay-ms', String(60 * 60 * 1000)],
      ]) {
        assert.throws(() => parseFaultArgs(args), Error, args.join(' '));
      }
    });
  });

  describe('command line', () => {
    it('when only port, data and keys file are given, then the defaults fill the rest', () => {
      const config = parseStorageNodeArgs(['--port', '0', '--data', 'some/dir', '--keys-file', 'keys']);
      assert.equal(config.port, 0);
      assert.equal(config.host, '127.0.0.1');
      assert.equal(config.dataDir, path.resolve('some/dir'));
      assert.equal(config.keysFile, path.resolve('keys'));
      assert.equal(config.tls, undefined);
      assert.ok(Object.isFrozen(config));
    });

    it('when every option is given, then each is parsed', () => {
      const config = parseStorageNodeArgs([
        '--port=7001',
        '--host',
        '0.0.0.0',
        '--data',
        '/tmp/x',
        '--keys-file',
        '/etc/node/keys',
        '--tls-cert',
        '/etc/node/cert.pem',
        '--tls-key',
        '/etc/node/key.pem',
        '--remember-request-ids',
        '1000',
        '--kept-changes',
        '5',
        '--public-url',
        'https://node-1.internal:4101',
        '--public-url',
        'https://node-1.example.net/',
        '--max-connections',
        '64',
      ]);
      assert.deepEqual(
        { ...config },
        {
          port: 7001,
          host: '0.0.0.0',
          dataDir: '/tmp/x',
          keysFile: '/etc/node/keys',
          tls: { certFile: '/etc/node/cert.pem', keyFile: '/etc/node/key.pem' },
          publicUrls: ['https://node-1.internal:4101', 'https://node-1.example.net/'],
          maxRememberedRequestIds: 1000,
          maxConnections: 64,
          keptChanges: 5,
        },
      );
    });

    it('when an option is missing, unknown or out of range, then parsing throws', () => {
      const base = ['--keys-file', 'k'];
      for (const args of [
        ['--data', 'd', ...base],
        ['--port', '0', ...base],
        ['--port', '0', '--data', 'd'],
        ['--port', '65536', '--data', 'd', ...base],
        ['--port', '-1', '--data', 'd', ...base],
        ['--port', '0', '--data', 'd', ...base, '--fault', 'http500'],
        ['--port', '0', '--data', 'd', ...base, '--delay-ms', '250'],
        ['--port', '0', '--data', 'd', ...base, '--remember-request-ids', '0'],
        ['--port', '0', '--data', 'd', ...base, '--tls-cert', 'c.pem'],
        ['--port', '0', '--data', 'd', ...base, '--tls-key', 'k.pem'],
        ['--port', '0', '--data', 'd', ...base, '--verbose'],
        ['--port', '0', '--data', 'd', ...base, 'extra'],
        ['--port', '0', '--data', 'd', ...base, '--max-connections', '0'],
        ['--port', '0', '--data', 'd', ...base, '--host', '::'],
        ['--port', '0', '--data', 'd', ...base, '--public-url', 'node-1:4101'],
        ['--port', '0', '--data', 'd', ...base, '--public-url', 'ftp://node-1:4101'],
        ['--port', '0', '--data', 'd', ...base, '--public-url', 'https://node-1:4101/v1'],
        ['--port', '0', '--data', 'd', ...base, '--public-url', 'https://user:pw@node-1:4101'],
      ]) {
        assert.throws(() => parseStorageNodeArgs(args), Error, args.join(' '));
      }
    });

    it('when the keys file is missing, then the message says the node accepts only signed requests', () => {
      assert.throws(
        () => parseStorageNodeArgs(['--port', '0', '--data', 'd']),
        /--keys-file is required: the node accepts only requests signed/,
      );
    });
  });
});
