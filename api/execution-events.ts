import type { Logger } from 'pino';
import { FINAL_STATUSES, recordVersion, type ExecutionRecord } from '../domain/execution-state';
import { executionWorkflowId } from '../workflows/definitions';

/** One SSE client of one execution. */
export interface EventSubscriber {
  send(record: ExecutionRecord): void;
  end(): void;
}

export const isFinal = (record: ExecutionRecord) => FINAL_STATUSES.includes(record.status);

interface Watch {
  wallet: string;
  executionId: string;
  last: ExecutionRecord;
  subscribers: Map<EventSubscriber, number>;
  timer?: NodeJS.Timeout;
}

/**
 * The SSE fan-out of one API process (docs/decisions/0053-sse-polls-per-process.md). Each
 * execution with subscribers is read once per `pollMs` however many subscribers it has, and each
 * change is sent to all of them. Reading is a query while the workflow exists and the read model
 * after, so it works the same behind any number of API processes, costs the workflow no Update
 * (Temporal allows 10 in flight per workflow) and writes nothing to its history.
 */
export class ExecutionEventHub {
  private readonly watches = new Map<string, Watch>();

  constructor(
    private readonly read: (wallet: string, executionId: string) => Promise<ExecutionRecord>,
    private readonly pollMs: number,
    private readonly logger: Logger,
  ) {}

  /** Executions being watched and their subscribers, for tests and metrics. */
  stats(): { executions: number; subscribers: number } {
    let subscribers = 0;
    for (const w of this.watches.values()) subscribers += w.subscribers.size;
    return { executions: this.watches.size, subscribers };
  }

  /**
   * Sends `subscriber` every newer record of the execution than `known` (which it already has),
   * and ends it after a final status. Returns the function that unsubscribes.
   */
  subscribe(known: ExecutionRecord, subscriber: EventSubscriber): () => void {
    const id = executionWorkflowId(known.wallet, known.executionId);
    let watch = this.watches.get(id);
    if (!watch) {
      watch = { wallet: known.wallet, executionId: known.executionId, last: known, subscribers: new Map() };
      this.watches.set(id, watch);
      this.schedule(id, watch);
    }
    watch.subscribers.set(subscriber, recordVersion(known));
    // A watch that already saw something newer than this subscriber's first record catches it up.
    if (recordVersion(watch.last) > recordVersion(known)) this.deliver(id, watch);
    const w = watch;
    return () => {
      w.subscribers.delete(subscriber);
      if (w.subscribers.size === 0) this.stop(id, w);
    };
  }

  /** Ends every stream (API shutdown): EventSource clients reconnect, to another process if there is one. */
  close(): void {
    for (const [id, watch] of this.watches) {
      for (const s of watch.subscribers.keys()) s.end();
      this.stop(id, watch);
    }
  }

  private schedule(id: string, watch: Watch): void {
    watch.timer = setTimeout(() => void this.poll(id, watch), this.pollMs);
    watch.timer.unref();
  }

  private stop(id: string, watch: Watch): void {
    clearTimeout(watch.timer);
    watch.timer = undefined;
    if (this.watches.get(id) === watch) this.watches.delete(id);
  }

  private async poll(id: string, watch: Watch): Promise<void> {
    try {
      const record = await this.read(watch.wallet, watch.executionId);
      if (recordVersion(record) > recordVersion(watch.last)) watch.last = record;
    } catch (err) {
      // A busy or briefly unreachable Temporal: the subscribers wait for the next round.
      this.logger.warn({ workflowId: id, reason: (err as Error).message }, 'SSE read of an execution failed; retrying');
    }
    if (this.watches.get(id) !== watch) return;
    this.deliver(id, watch);
    if (this.watches.get(id) === watch) this.schedule(id, watch);
  }

  private deliver(id: string, watch: Watch): void {
    const version = recordVersion(watch.last);
    for (const [subscriber, seen] of watch.subscribers) {
      if (seen < version) {
        watch.subscribers.set(subscriber, version);
        subscriber.send(watch.last);
      }
    }
    if (isFinal(watch.last)) {
      for (const s of watch.subscribers.keys()) s.end();
      this.stop(id, watch);
    }
  }
}
