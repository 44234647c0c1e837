import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { unavailable, tooManyRequests } from '../../domain/errors';
import { FINAL_STATUSES, recordVersion, type ExecutionRecord } from '../../domain/execution-state';
import { executionWorkflowId } from '../../contracts/temporal';
import { OPEN_REFUND_STATES } from '../../domain/refund-states';
import type { RefundSummary } from './refund-summary';
import { StreamSlots, type SlotCaps, type SlotRefusal } from './stream-slots';

/** One SSE client of one execution: `write` answers false when its socket buffer is full. */
export interface EventSubscriber {
  write(text: string): boolean;
  end(): void;
}

export const isFinal = (record: ExecutionRecord) => FINAL_STATUSES.includes(record.status);

/** The refunds ledger rows an execution's stream follows (its record's first rows), as read at one time. */
export interface RefundRows {
  rows: readonly RefundSummary[];
  /** Each row's event data by row id: a row whose data changed is sent again. */
  data: ReadonlyMap<string, string>;
  /** Names the rows as they stand: part of the stream's event id; empty when there are none. */
  digest: string;
}

export function refundRows(rows: readonly RefundSummary[]): RefundRows {
  const data = new Map(rows.map((r) => [r.id, JSON.stringify(r)]));
  const digest =
    rows.length === 0
      ? ''
      : createHash('sha256')
          .update([...data.values()].join('\n'))
          .digest('hex')
          .slice(0, 16);
  return { rows, data, digest };
}

/**
 * The stream's position: `<record version>`, or `<record version>.<refund rows digest>` once the
 * execution has refund rows. Sent as the id of the last event of each write; a reconnect's
 * Last-Event-ID says what the client has.
 */
export const streamCursor = (record: ExecutionRecord, refunds: RefundRows | undefined): string =>
  refunds === undefined || refunds.digest === '' ? String(recordVersion(record)) : `${recordVersion(record)}.${refunds.digest}`;

/** What a subscriber has been sent: the record's version, its history entries, the refund rows (undefined: none known). */
export interface Seen {
  version: number;
  statuses: number;
  refunds?: RefundRows;
}

/** What a subscriber has once it has been sent `record` and `refunds`. */
export const seenAll = (record: ExecutionRecord, refunds: RefundRows | undefined): Seen => ({
  version: recordVersion(record),
  statuses: record.history.length,
  ...(refunds ? { refunds } : {}),
});

/** What a reconnect's Last-Event-ID says the client has of `record` and `refunds` (a record version it names that is not this one: nothing). */
export function seenBy(lastEventId: string, record: ExecutionRecord, refunds: RefundRows | undefined): Seen {
  const [version, digest = ''] = lastEventId.split('.');
  const current = version === String(recordVersion(record));
  return {
    version: current ? recordVersion(record) : -1,
    statuses: record.history.length,
    ...(refunds !== undefined && digest === refunds.digest ? { refunds } : {}),
  };
}

/** Nothing more will come: a final status, and the refund rows known with none of them open. */
export const isClosed = (record: ExecutionRecord, refunds: RefundRows | undefined): boolean =>
  isFinal(record) && refunds !== undefined && refunds.rows.every((r) => !OPEN_REFUND_STATES.includes(r.state));

/** One SSE event: the record, with the stream's cursor as its event id (EventSource sends it back as Last-Event-ID). */
export const sseEvent = (record: ExecutionRecord, refunds?: RefundRows) =>
  `id: ${streamCursor(record, refunds)}\nevent: status\ndata: ${JSON.stringify(record)}\n\n`;

/**
 * The record as it stood when it reached history entry `index`: the status, the time and the
 * history up to it; sent, without an id, for a status that came and went between two reads, so
 * that a subscriber sees every status change. Its other fields are the newest record's.
 */
export function passedStatusEvent(record: ExecutionRecord, index: number): string {
  const entry = record.history[index];
  const then = { ...record, status: entry.status, updatedAt: entry.at, history: record.history.slice(0, index + 1) };
  return `event: status\ndata: ${JSON.stringify(then)}\n\n`;
}

/**
 * The events that bring a subscriber from `seen` to `record` and `refunds`, '' when it has them:
 * the statuses that came and went, then each refund row that is new or changed (`event: refund`),
 * then the record. The last event carries the stream's cursor as its id, so that a client that has
 * an id has every event before it.
 */
export function eventsSince(seen: Seen, record: ExecutionRecord, refunds: RefundRows | undefined): string {
  const statusChanged = seen.version < recordVersion(record);
  const changedRows =
    refunds === undefined || seen.refunds?.digest === refunds.digest
      ? []
      : [...refunds.data].filter(([id, data]) => seen.refunds?.data.get(id) !== data).map(([, data]) => data);
  if (!statusChanged && changedRows.length === 0) return '';
  let text = '';
  if (statusChanged) for (let i = seen.statuses; i < record.history.length - 1; i++) text += passedStatusEvent(record, i);
  changedRows.forEach((data, i) => {
    const last = !statusChanged && i === changedRows.length - 1;
    text += `${last ? `id: ${streamCursor(record, refunds)}\n` : ''}event: refund\ndata: ${data}\n\n`;
  });
  return statusChanged ? text + sseEvent(record, refunds) : text;
}

/** The caps of ./stream-slots.ts (beyond a client's, its site's or its network's: 429; beyond the process's: 503) and a lifetime. */
export interface StreamLimits extends SlotCaps {
  /** A stream ends after this long; EventSource reconnects with Last-Event-ID. */
  maxLifetimeMs: number;
}

const REFUSED_BY: Record<Exclude<SlotRefusal['scope'], 'process'>, string> = {
  client: 'this client address',
  site: "this client's /56",
  network: "this client's network (/24 or /48)",
};

interface Watch {
  last: ExecutionRecord;
  /** The newest refund rows read, and the read that got them (undefined until one did). */
  refunds?: RefundRows;
  ticket: number;
  subscribers: Map<EventSubscriber, Seen>;
}

/** Refund rows read for one execution, with the read's place in the order of the hub's reads. */
export interface RefundRead {
  refunds: RefundRows;
  ticket: number;
}

/** How long a refused client should wait before it tries to open a stream again. */
const STREAM_RETRY_AFTER_S = 5;

/**
 * The SSE fan-out of one API process (docs/decisions/0064-sse-from-the-read-model.md,
 * docs/decisions/0084-event-streams-carry-refunds.md). Every `pollMs` it reads all watched
 * executions, and their first refund rows, from the read model in one query each, however many
 * subscribers they have: an idle stream costs Temporal nothing. A change is serialised once per
 * subscriber state and written to every subscriber in it; one whose socket cannot keep up is ended
 * (it reconnects). A status that came and went between two reads is still sent. Streams are capped
 * per client, per wider network of the client and per process (./stream-slots.ts) and end after a
 * maximum lifetime, or once the execution is final and none of its refund rows is open.
 */
export class ExecutionEventHub {
  private readonly watches = new Map<string, Watch>();
  private readonly slots: StreamSlots;
  private reads = 0;
  /** Numbers every refund read in the order it started: an older read never replaces a newer one's rows. */
  private tickets = 0;
  private timer: NodeJS.Timeout | undefined;
  private polling = false;

  constructor(
    private readonly readMany: (workflowIds: string[]) => Promise<Map<string, ExecutionRecord>>,
    private readonly pollMs: number,
    private readonly limits: StreamLimits,
    private readonly logger: Logger,
    /** Each execution's refund rows the stream follows (executions without rows may be absent). */
    private readonly readRefunds: (workflowIds: string[]) => Promise<Map<string, RefundSummary[]>> = async () => new Map(),
  ) {
    this.slots = new StreamSlots(limits);
  }

  /** Watched executions, their subscribers, open streams and read-model reads so far, for tests and metrics. */
  stats(): { executions: number; subscribers: number; streams: number; reads: number } {
    let subscribers = 0;
    for (const w of this.watches.values()) subscribers += w.subscribers.size;
    return { executions: this.watches.size, subscribers, streams: this.slots.streams, reads: this.reads };
  }

  /**
   * Takes one stream slot for the client at `ip`, or throws 429 (the client, its /56 or its network
   * holds its share) or 503 (the process holds its share). The returned function gives the slot
   * back; call it once.
   */
  admit(ip: string): () => void {
    const grant = this.slots.take(ip);
    if (grant.ok) return grant.release;
    const { scope, cap } = grant.refused;
    if (scope === 'process') throw unavailable('this API serves its maximum of event streams; try again later', STREAM_RETRY_AFTER_S);
    throw tooManyRequests(`too many open event streams from ${REFUSED_BY[scope]} (${cap})`, STREAM_RETRY_AFTER_S);
  }

  /** The lifetime after which the route ends a stream. */
  get maxLifetimeMs(): number {
    return this.limits.maxLifetimeMs;
  }

  /** The refund rows a new stream of `workflowId` starts from, numbered among the hub's reads; throws when the read model does. */
  async refundsOf(workflowId: string): Promise<RefundRead> {
    const ticket = ++this.tickets;
    const rows = await this.readRefunds([workflowId]);
    return { refunds: refundRows(rows.get(workflowId) ?? []), ticket };
  }

  /**
   * Sends `subscriber` everything newer than `seen` (what it has of the execution: `known` and
   * the refund rows of `read`, or older), and ends it once the execution is closed (`isClosed`).
   * Returns the function that unsubscribes.
   */
  subscribe(known: ExecutionRecord, seen: Seen, read: RefundRead | undefined, subscriber: EventSubscriber): () => void {
    const id = executionWorkflowId(known.wallet, known.executionId);
    let watch = this.watches.get(id);
    if (!watch) {
      watch = { last: known, ticket: 0, subscribers: new Map() };
      this.watches.set(id, watch);
    }
    if (recordVersion(known) > recordVersion(watch.last)) watch.last = known;
    if (read && read.ticket > watch.ticket) [watch.refunds, watch.ticket] = [read.refunds, read.ticket];
    watch.subscribers.set(subscriber, seen);
    // A watch that already saw something newer than this subscriber has catches it up.
    this.deliver(id, watch);
    this.schedule();
    const w = watch;
    return () => {
      w.subscribers.delete(subscriber);
      if (w.subscribers.size === 0 && this.watches.get(id) === w) this.watches.delete(id);
    };
  }

  /** Ends every stream (API shutdown): EventSource clients reconnect, to another process if there is one. */
  close(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    for (const watch of this.watches.values()) for (const s of watch.subscribers.keys()) s.end();
    this.watches.clear();
  }

  private schedule(): void {
    if (this.timer || this.polling || this.watches.size === 0) return;
    this.timer = setTimeout(() => void this.poll(), this.pollMs);
    this.timer.unref();
  }

  private async poll(): Promise<void> {
    this.timer = undefined;
    this.polling = true;
    try {
      const ids = [...this.watches.keys()];
      this.reads++;
      const ticket = ++this.tickets;
      const [records, rows] = await Promise.all([this.readMany(ids), this.readRefunds(ids)]);
      for (const id of ids) {
        const watch = this.watches.get(id);
        const record = records.get(id);
        if (!watch || !record) continue;
        if (recordVersion(record) > recordVersion(watch.last)) watch.last = record;
        if (ticket > watch.ticket) {
          const refunds = refundRows(rows.get(id) ?? []);
          // The same rows keep their object: subscribers that have them compare by digest.
          if (refunds.digest !== watch.refunds?.digest) watch.refunds = refunds;
          watch.ticket = ticket;
        }
        this.deliver(id, watch);
      }
    } catch (err) {
      // The read model briefly unreachable: the subscribers wait for the next round.
      this.logger.warn({ reason: (err as Error).message }, 'SSE read of the watched executions failed; retrying');
    } finally {
      this.polling = false;
      this.schedule();
    }
  }

  private deliver(id: string, watch: Watch): void {
    const { last, refunds } = watch;
    const now = seenAll(last, refunds);
    // Serialised once per state subscribers are in, whatever their number.
    const texts = new Map<string, string>();
    for (const [subscriber, seen] of watch.subscribers) {
      const key = `${seen.version}/${seen.statuses}/${seen.refunds?.digest ?? '-'}`;
      let text = texts.get(key);
      if (text === undefined) texts.set(key, (text = eventsSince(seen, last, refunds)));
      if (text === '') continue;
      watch.subscribers.set(subscriber, now);
      // A subscriber that cannot take its events is ended rather than buffered without bound.
      if (!subscriber.write(text)) subscriber.end();
    }
    if (isClosed(last, refunds)) {
      for (const s of watch.subscribers.keys()) s.end();
      if (this.watches.get(id) === watch) this.watches.delete(id);
    }
  }
}
