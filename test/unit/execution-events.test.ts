import assert from 'node:assert/strict';
import pino from 'pino';
import { ExecutionEventHub } from '../../api/executions/events';
import type { ExecutionRecord } from '../../domain/execution-state';
import { executionWorkflowId } from '../../contracts/temporal';

const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString();
const base = {
  executionId: 'e1',
  wallet: 'W',
  intent: {},
  intentHash: '00',
  signerPublicKey: '11',
  createdAt: at(0),
  expiresAt: at(600),
  refusedDeposits: [],
} as unknown as ExecutionRecord;
const prepared: ExecutionRecord = { ...base, status: 'PREPARED', updatedAt: at(0), history: [{ status: 'PREPARED', at: at(0) }] };
const signing: ExecutionRecord = {
  ...base,
  status: 'SIGNING',
  updatedAt: at(2),
  deposit: { txHash: '0x1' },
  signedPayload: { signature: 'ab' },
  history: [
    { status: 'PREPARED', at: at(0) },
    { status: 'OPERATION_PENDING', at: at(1) },
    { status: 'SIGNING', at: at(2) },
  ],
} as unknown as ExecutionRecord;

describe('unit: the SSE hub (one read per interval, every status once, serialised once)', () => {
  it('when two status changes land between two reads, then every subscriber gets both, in order, from one serialisation, and the stream ends at the final status', async () => {
    const records = new Map([[executionWorkflowId('W', 'e1'), prepared]]);
    let reads = 0;
    const hub = new ExecutionEventHub(
      async () => {
        reads++;
        return records;
      },
      20,
      { maxStreams: 10, maxPerClient: 10, maxPerSite: 10, maxPerNetwork: 10, maxLifetimeMs: 60_000 },
      pino({ level: 'silent' }),
    );
    const got: string[][] = [[], [], []];
    const ended: boolean[] = [false, false, false];
    const writes: string[] = [];
    for (let i = 0; i < 3; i++)
      hub.subscribe(prepared, {
        write: (text) => {
          writes.push(text);
          got[i].push(...[...text.matchAll(/data: (.*)\n/g)].map((m) => JSON.parse(m[1]).status));
          return true;
        },
        end: () => (ended[i] = true),
      });
    await new Promise((r) => setTimeout(r, 60));
    const idleReads = reads;
    assert.ok(idleReads >= 1 && idleReads <= 4, `one read per interval for all subscribers: ${idleReads}`);
    records.set(executionWorkflowId('W', 'e1'), signing);
    await new Promise((r) => setTimeout(r, 60));
    assert.deepEqual(got, Array(3).fill(['OPERATION_PENDING', 'SIGNING']));
    assert.deepEqual(ended, [true, true, true]);
    assert.ok(
      writes.every((w) => w === writes[0]),
      'the same text for every subscriber',
    );
    assert.deepEqual(hub.stats().executions, 0);
  });

  it('when a subscriber cannot take its events, then it is ended rather than buffered', async () => {
    const records = new Map([[executionWorkflowId('W', 'e1'), signing]]);
    const hub = new ExecutionEventHub(
      async () => records,
      10,
      { maxStreams: 10, maxPerClient: 10, maxPerSite: 10, maxPerNetwork: 10, maxLifetimeMs: 60_000 },
      pino({ level: 'silent' }),
    );
    let ended = false;
    hub.subscribe(prepared, { write: () => false, end: () => (ended = true) });
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(ended, true);
  });

  it('when the caps are reached, then admit refuses with 429 per client and 503 per process, and a release frees the slot', () => {
    const hub = new ExecutionEventHub(
      async () => new Map(),
      1000,
      { maxStreams: 2, maxPerClient: 1, maxPerSite: 2, maxPerNetwork: 2, maxLifetimeMs: 1 },
      pino({ level: 'silent' }),
    );
    const release = hub.admit('a');
    assert.throws(
      () => hub.admit('a'),
      (e: { status?: number; retryAfterS?: number }) => e.status === 429 && (e.retryAfterS ?? 0) > 0,
    );
    hub.admit('b');
    assert.throws(
      () => hub.admit('c'),
      (e: { status?: number }) => e.status === 503,
    );
    release();
    release();
    assert.doesNotThrow(() => hub.admit('c'));
    assert.equal(hub.stats().streams, 2);
  });
});
