import assert from 'node:assert/strict';
import pino from 'pino';
import { ExecutionEventHub, eventsSince, isClosed, refundRows, seenAll, seenBy, streamCursor } from '../../api/executions/events';
import type { RefundSummary } from '../../api/executions/refund-summary';
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
      hub.subscribe(prepared, seenAll(prepared, undefined), undefined, {
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
    hub.subscribe(prepared, seenAll(prepared, undefined), undefined, { write: () => false, end: () => (ended = true) });
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

  const expired: ExecutionRecord = {
    ...base,
    status: 'EXPIRED',
    updatedAt: at(3),
    history: [
      { status: 'PREPARED', at: at(0) },
      { status: 'OPERATION_PENDING', at: at(1) },
      { status: 'EXPIRED', at: at(3) },
    ],
  } as unknown as ExecutionRecord;
  const row = (state: RefundSummary['state'], more: Partial<RefundSummary> = {}): RefundSummary => ({
    id: 'a'.repeat(32),
    txHash: '0x' + '1'.repeat(64),
    transferIndex: 0,
    asset: 'native',
    amount: '5000',
    reason: 'unsigned-by-deadline',
    state,
    ...more,
  });
  /** Each event of a written text: its name, its id (when it has one) and its data's state or status. */
  const parse = (text: string) =>
    text
      .split('\n\n')
      .filter((block) => block.includes('data: '))
      .map((block) => {
        const field = (name: string) => block.match(new RegExp(`^${name}: (.*)$`, 'm'))?.[1];
        const data = JSON.parse(field('data')!);
        return {
          event: field('event'),
          id: field('id'),
          what: (data.state ?? data.status) as string,
          refundTxHash: data.refundTxHash as unknown,
        };
      });

  it('when an execution is final with a refund row open, then the stream carries every change of the row (due → paying → refunded, with refundTxHash) and ends only once the row is settled', async () => {
    const id = executionWorkflowId('W', 'e1');
    const records = new Map([[id, expired]]);
    const rows = new Map<string, RefundSummary[]>([[id, [row('due')]]]);
    const hub = new ExecutionEventHub(
      async () => records,
      10,
      { maxStreams: 10, maxPerClient: 10, maxPerSite: 10, maxPerNetwork: 10, maxLifetimeMs: 60_000 },
      pino({ level: 'silent' }),
      async () => rows,
    );
    const read = await hub.refundsOf(id);
    // What the route writes first: the record and the row, the record last with the stream's cursor.
    const first = parse(eventsSince(seenAll(prepared, undefined), expired, read.refunds));
    assert.deepEqual(
      first.map(({ event, id, what }) => ({ event, id, what })),
      [
        { event: 'status', id: undefined, what: 'OPERATION_PENDING' },
        { event: 'refund', id: undefined, what: 'due' },
        { event: 'status', id: streamCursor(expired, read.refunds), what: 'EXPIRED' },
      ],
    );
    assert.equal(isClosed(expired, read.refunds), false, 'a final execution with a due row stays open');
    const got: Array<ReturnType<typeof parse>[number]> = [];
    let ended = false;
    hub.subscribe(expired, seenAll(expired, read.refunds), read, {
      write: (text) => {
        got.push(...parse(text));
        return true;
      },
      end: () => (ended = true),
    });
    await new Promise((r) => setTimeout(r, 40));
    assert.equal(got.length, 0, 'nothing new, nothing sent');
    rows.set(id, [row('paying')]);
    await new Promise((r) => setTimeout(r, 40));
    const refundTxHash = '0x' + '2'.repeat(64);
    const refunded = row('refunded', { refundTxHash, refundValue: '4000' });
    rows.set(id, [refunded]);
    await new Promise((r) => setTimeout(r, 40));
    assert.deepEqual(
      got.map((e) => [e.event, e.what]),
      [
        ['refund', 'paying'],
        ['refund', 'refunded'],
      ],
    );
    assert.equal(got[1].refundTxHash, refundTxHash);
    assert.equal(got[1].id, `${streamCursor(expired, undefined)}.${refundRows([refunded]).digest}`, 'the last event carries the cursor');
    assert.equal(ended, true, 'nothing open: the stream ends');
    assert.equal(hub.stats().executions, 0);

    // A reconnect with that cursor has everything: nothing to send, and closed (the route answers 204).
    const now = refundRows([refunded]);
    assert.equal(eventsSince(seenBy(got[1].id!, expired, now), expired, now), '');
    assert.equal(isClosed(expired, now), true);
    // One with an older cursor gets the rows again (as they stand), not the record it has.
    const again = parse(eventsSince(seenBy(first[2].id!, expired, now), expired, now));
    assert.deepEqual(
      again.map(({ event, id, what }) => ({ event, id, what })),
      [{ event: 'refund', id: got[1].id, what: 'refunded' }],
    );
  });

  it('when a row is held, then its event says why, and the stream stays open while it is held', async () => {
    const id = executionWorkflowId('W', 'e1');
    const held = row('held', { holdReason: 'too-small' });
    const hub = new ExecutionEventHub(
      async () => new Map([[id, signing]]),
      10,
      { maxStreams: 10, maxPerClient: 10, maxPerSite: 10, maxPerNetwork: 10, maxLifetimeMs: 60_000 },
      pino({ level: 'silent' }),
      async () => new Map([[id, [held]]]),
    );
    const texts: string[] = [];
    let ended = false;
    // A subscriber whose rows were not read (the read model was down when it came): the hub sends them.
    hub.subscribe(signing, seenAll(signing, undefined), undefined, { write: (t) => (texts.push(t), true), end: () => (ended = true) });
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(texts.length, 1, texts.join('|'));
    assert.match(texts[0], /^id: \d+\.[0-9a-f]{16}\nevent: refund\ndata: /);
    assert.deepEqual(JSON.parse(texts[0].split('data: ')[1]), held);
    assert.equal(ended, false);
    hub.close();
  });
});
