import type { CustomSlotSupplier, SlotPermit, SlotReleaseContext, SlotReserveContext, WorkflowSlotInfo } from '@temporalio/worker';
import { maySlot, type SlotLimits, type SlotState } from '../domain/worker-capacity';

/** A permit says which kind of poll it was handed to, so that its release gives back the right count. */
interface ExecutionSlotPermit extends SlotPermit {
  sticky: boolean;
}

/** How often waiting polls look again at the cache (it shrinks by evictions, which release no slot). */
const RECHECK_MS = 200;

/**
 * The workflow task slots of the executions' worker (docs/decisions/0107): at most `concurrent`
 * tasks at once, and no poll of the task queue itself (which may bring a new run) while the cache
 * holds `openRuns` runs, counting the slots already out for such polls. Sticky polls, which serve
 * the runs this worker already holds, go on. A poll held back leaves the server to give new runs
 * to workers with room: the reservation stays pending, which the core allows (a reservation ends
 * in a permit or an abort).
 */
export class ExecutionSlots implements CustomSlotSupplier<WorkflowSlotInfo> {
  readonly type = 'custom' as const;
  private readonly state: SlotState = { sticky: 0, nonSticky: 0, cached: 0 };
  private readonly waiting = new Set<() => void>();
  private timer?: NodeJS.Timeout;
  private cachedRuns: () => number = () => 0;

  constructor(private readonly limits: SlotLimits) {}

  /** Where the cache's size is read (the worker's numCachedWorkflows), once the worker exists. */
  countCachedWith(cachedRuns: () => number): void {
    this.cachedRuns = cachedRuns;
    this.wake();
  }

  /** The runs in the cache and the slots held, for the worker's metrics. */
  snapshot(): Readonly<SlotState> {
    return { ...this.state, cached: this.cachedRuns() };
  }

  async reserveSlot(ctx: SlotReserveContext, abortSignal: AbortSignal): Promise<SlotPermit> {
    for (;;) {
      const permit = this.tryReserveSlot(ctx);
      if (permit) return permit;
      await this.nextChance(abortSignal);
    }
  }

  tryReserveSlot(ctx: SlotReserveContext): SlotPermit | null {
    this.state.cached = this.cachedRuns();
    if (!maySlot(ctx.isSticky, this.state, this.limits)) return null;
    if (ctx.isSticky) this.state.sticky++;
    else this.state.nonSticky++;
    return { sticky: ctx.isSticky } satisfies ExecutionSlotPermit;
  }

  markSlotUsed(): void {}

  releaseSlot(ctx: SlotReleaseContext<WorkflowSlotInfo>): void {
    if ((ctx.permit as ExecutionSlotPermit).sticky) this.state.sticky--;
    else this.state.nonSticky--;
    this.wake();
  }

  /** Resolves when a slot was released or the recheck interval passed; rejects with an AbortError on abort. */
  private nextChance(abortSignal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const done = () => {
        this.waiting.delete(done);
        abortSignal.removeEventListener('abort', aborted);
        if (this.waiting.size === 0) this.stopTimer();
        resolve();
      };
      const aborted = () => {
        this.waiting.delete(done);
        if (this.waiting.size === 0) this.stopTimer();
        // The SDK logs any other rejection of an aborted reservation as an error.
        reject(abortSignal.reason);
      };
      if (abortSignal.aborted) return aborted();
      abortSignal.addEventListener('abort', aborted, { once: true });
      this.waiting.add(done);
      // Never what keeps the process alive: a stopping worker aborts its reservations.
      this.timer ??= setInterval(() => this.wake(), RECHECK_MS).unref();
    });
  }

  private wake(): void {
    for (const done of [...this.waiting]) done();
  }

  private stopTimer(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
