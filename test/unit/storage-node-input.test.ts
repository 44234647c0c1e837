import assert from 'node:assert/strict';
import path from 'node:path';
import { ServiceError } from '../../domain/errors';
import { parseStorageNodeArgs } from '../../storage-node/config';
import { parseApplyRequest, parseFaultUpdate } from '../../storage-node/validate';

const badRequest = (err: unknown) => err instanceof ServiceError && err.status === 400;

describe('storage node input parsing', () => {
  describe('apply body', () => {
    it('when the body is well formed, then it comes back typed with only the known fields', () => {
      const body = { batchId: 'b1', changes: [{ op_type: 'remove_entry', kind: 'developer', entry: '0xAbC' }] };
      assert.deepEqual(parseApplyRequest(body), body);
    });

    it('when changes is empty, then it is accepted', () => {
      assert.deepEqual(parseApplyRequest({ batchId: 'b', changes: [] }), { batchId: 'b', changes: [] });
    });

    it('when a field is missing, mistyped, out of range or unknown, then it is a 400', () => {
      const change = { op_type: 'add_entry', kind: 'user', entry: 'e' };
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
        { batchId: 'b', changes: [change], deadline: 5 },
      ]) {
        assert.throws(() => parseApplyRequest(body), badRequest, JSON.stringify(body));
      }
    });

    it('when batchId is exactly 200 characters, then it is accepted', () => {
      assert.equal(parseApplyRequest({ batchId: 'x'.repeat(200), changes: [] }).batchId.length, 200);
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

  describe('command line', () => {
    it('when only port and data are given, then the defaults fill the rest', () => {
      const config = parseStorageNodeArgs(['--port', '0', '--data', 'some/dir']);
      assert.equal(config.port, 0);
      assert.equal(config.host, '127.0.0.1');
      assert.equal(config.dataDir, path.resolve('some/dir'));
      assert.deepEqual(config.faults, { delayMs: 0, fault: 'none' });
      assert.equal(config.enableFaultApi, false);
      assert.ok(Object.isFrozen(config));
    });

    it('when every option is given, then each is parsed', () => {
      const config = parseStorageNodeArgs([
        '--port=7001',
        '--host',
        '0.0.0.0',
        '--data',
        '/tmp/x',
        '--compact-after-batches',
        '10',
        '--remember-batches',
        '50',
        '--delay-ms',
        '250',
        '--fault',
        'http500',
        '--enable-fault-api',
      ]);
      assert.deepEqual(
        { ...config },
        {
          port: 7001,
          host: '0.0.0.0',
          dataDir: '/tmp/x',
          compactAfterBatches: 10,
          maxRememberedBatches: 50,
          faults: { delayMs: 250, fault: 'http500' },
          enableFaultApi: true,
        },
      );
    });

    it('when an option is missing, unknown or out of range, then parsing throws', () => {
      for (const args of [
        ['--data', 'd'],
        ['--port', '0'],
        ['--port', '65536', '--data', 'd'],
        ['--port', '-1', '--data', 'd'],
        ['--port', '0', '--data', 'd', '--fault', 'slow'],
        ['--port', '0', '--data', 'd', '--delay-ms', 'soon'],
        ['--port', '0', '--data', 'd', '--compact-after-batches', '0'],
        ['--port', '0', '--data', 'd', '--verbose'],
        ['--port', '0', '--data', 'd', 'extra'],
      ]) {
        assert.throws(() => parseStorageNodeArgs(args), Error, args.join(' '));
      }
    });
  });
});
