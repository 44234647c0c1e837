import type { Logger } from 'pino';
import { unavailable, tooManyRequests } from '../../domain/errors';
import { FINAL_STATUSES, recordVersion, type ExecutionRecord } from '../../domain/execution-state';
import { executionWorkflowId } from '../../contracts/temporal';
import { StreamSlots, type SlotCaps, type SlotRefusal } from './stream-slots';

/** One SSE client of one execution: `write` answers false when its socket buffer is full. */
export interface EventSubscriber {
  write(text: string): boolean;
  end(): void;
}

export const isFinal = (record: ExecutionRecord) => FINAL_STATUSES.includes(record.status);

/** One SSE event: the record, its version as the event id (EventSource sends it back as Last-Event-ID). */
export const sseEvent = (record: ExecutionRecord) => `id: ${recordVersion(record)}\nevent: status\ndata: ${JSON.stringify(record)}\n\n`;

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

interface Seen {
  version: number;
  /** History entries the subscriber has had an event for. */
  statuses: number;
}

interface Watch {
  last: ExecutionRecord;
  subscribers: Map<EventSubscriber, Seen>;
}

/** How long a refused client should wait before it tries to open a stream again. */
const STREAM_RETRY_AFTER_S = 5;

/**
 * The SSE fan-out of one API process (docs/decisions/0064-sse-from-the-read-model.md). Every
 * `pollMs` it reads all watched executions from the read model in one query, however many
 * subscribers they have: an idle stream costs Temporal nothing. A change is serialised once and
 * written to every subscriber; one whose socket cannot keep up is ended (it reconnects). A status
 * that came and went between two reads is still sent. Streams are capped per client, per wider
 * network of the client and per process (./stream-slots.ts) and end after a maximum lifetime.
 */
export class ExecutionEventHub {
  private readonly watches = new Map<string, Watch>();
  private readonly slots: StreamSlots;
  private reads = 0;
  private timer: NodeJS.Timeout | undefined;
  private polling = false;

  constructor(
    private readonly readMany: (workflowIds: string[]) => Promise<Map<string, ExecutionRecord>>,
    private readonly pollMs: number,
    private readonly limits: StreamLimits,
    private readonly logger: Logger,
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

  /**
   * Sends `subscriber` every newer record of the execution than `known` (which it already has),
   * and ends it after a final status. Returns the function that unsubscribes.
   */
  subscribe(known: ExecutionRecord, subscriber: EventSubscriber): () => void {
    const id = executionWorkflowId(known.wallet, known.executionId);
    let watch = this.watches.get(id);
    if (!watch) {
      watch = { last: known, subscribers: new Map() };
      this.watches.set(id, watch);
    }
    watch.subscribers.set(subscriber, { version: recordVersion(known), statuses: known.history.length });
    // A watch that already saw something newer than this subscriber's first record catches it up.
    if (recordVersion(watch.last) > recordVersion(known)) this.deliver(id, watch);
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
      const records = await this.readMany(ids);
      for (const id of ids) {
        const watch = this.watches.get(id);
        const record = records.get(id);
        if (!watch || !record) continue;
        if (recordVersion(record) > recordVersion(watch.last)) watch.last = record;
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
    const { last } = watch;
    const version = recordVersion(last);
    // Serialised once per change, whatever the number of subscribers.
    let current: string | undefined;
    const passed = new Map<number, string>();
    for (const [subscriber, seen] of watch.subscribers) {
      if (seen.version >= version) continue;
      let text = '';
      for (let i = seen.statuses; i < last.history.length - 1; i++) {
        if (!passed.has(i)) passed.set(i, passedStatusEvent(last, i));
        text += passed.get(i);
      }
      current ??= sseEvent(last);
      watch.subscribers.set(subscriber, { version, statuses: last.history.length });
      // A subscriber that cannot take its events is ended rather than buffered without bound.
      if (!subscriber.write(text + current)) subscriber.end();
    }
    if (isFinal(last)) {
      for (const s of watch.subscribers.keys()) s.end();
      if (this.watches.get(id) === watch) this.watches.delete(id);
    }
  }
}
