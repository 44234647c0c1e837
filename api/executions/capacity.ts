import type { Client } from '@temporalio/client';
import type { ApiConfig } from '../../config/config';
import { EXECUTION_WORKFLOW_TYPE } from '../../contracts/temporal';
import type { ExecutionStore } from '../../db/execution-store';
import { ServiceError } from '../../domain/errors';
import { fromReadModel } from '../http/read-model';
import { admittedOpenRuns } from '../../domain/worker-capacity';

/** The code of a prepare refused because the service holds as many open runs as its workers may (503). */
export const CAPACITY_FULL = 'CAPACITY_FULL';
/** The code of a prepare refused because its wallet holds its share of the open executions (429). */
export const WALLET_CAPACITY_FULL = 'WALLET_CAPACITY_FULL';

/** Seconds to wait after CAPACITY_FULL: open executions close as they are signed, cancelled or expire. */
export const CAPACITY_RETRY_AFTER_S = 10;
/** Seconds to wait after WALLET_CAPACITY_FULL: the wallet's own executions must close first. */
export const WALLET_RETRY_AFTER_S = 30;

/** How long one count of the workers' other running workflows is reused. */
const OTHER_RUNS_MAX_AGE_MS = 5_000;

/**
 * A place counts without its execution's row in the read model for this long: the API writes
 * its first record at prepare, so a place older than this belonged to a start that failed
 * without an answer (docs/decisions/0082).
 */
export const ADMISSION_GRACE_MS = 10 * 60_000;

/**
 * Admission of new executions (docs/decisions/0082, 0107). The workers may hold so many open runs
 * on the service's task queue: what the live workers of the current build announce in the read
 * model, summed less the largest (CAPACITY_OPEN_RUNS unset), or CAPACITY_OPEN_RUNS. Counted
 * against it: the open executions, atomically in the read model that every API shares, and the
 * other workflows running on that queue (batches, the chain watcher, the whitelist repair, and
 * whatever an older build started there), counted by Temporal's visibility every few seconds,
 * since no prepare starts those. Refunds and webhook deliveries run on queues of their own and
 * take no place (decision 0089).
 */
export class Capacity {
  private others = 0;
  private othersAt = -Infinity;
  private counting?: Promise<void>;

  constructor(
    private readonly client: Client,
    private readonly config: ApiConfig,
    private readonly store: ExecutionStore,
    private readonly clock: () => number = Date.now,
  ) {}

  /**
   * Takes a place for a new execution, or throws: 503 CAPACITY_FULL beyond the service's open runs,
   * 429 WALLET_CAPACITY_FULL beyond the wallet's share, each with Retry-After.
   */
  async admit(wallet: string, workflowId: string): Promise<void> {
    const { openRuns, perWallet } = this.config.capacity;
    const others = openRuns !== 'off' ? await this.otherRuns() : 0;
    const limits = {
      ...(openRuns === undefined
        ? { open: { fromWorkers: { minus: others } } }
        : openRuns !== 'off'
          ? { open: Math.max(0, openRuns - others) }
          : {}),
      ...(perWallet > 0 ? { perWallet } : {}),
      graceMs: ADMISSION_GRACE_MS,
    };
    const now = new Date(this.clock());
    const answer = await fromReadModel('the execution store', () => this.store.admit(workflowId, wallet, limits, now));
    if (answer === 'capacity') {
      const bound =
        openRuns === undefined
          ? await this.store.liveWorkers(now).then(
              (live) => `the live workers take ${admittedOpenRuns(live)} open runs (${live.length} workers)`,
              () => "the live workers' bound",
            )
          : `${openRuns} open runs`;
      throw new ServiceError(
        503,
        CAPACITY_FULL,
        `the service holds as many open executions as its workers may (${bound}); try again later`,
        {
          expose: true,
          retryAfterS: CAPACITY_RETRY_AFTER_S,
        },
      );
    }
    if (answer === 'wallet')
      throw new ServiceError(
        429,
        WALLET_CAPACITY_FULL,
        `wallet ${wallet} has ${perWallet} open executions, its share; sign, cancel or let one expire first`,
        { retryAfterS: WALLET_RETRY_AFTER_S },
      );
  }

  /** Gives back the place of an execution whose workflow did not start (best effort: a place left over stops counting after the grace). */
  async release(workflowId: string): Promise<void> {
    await this.store.release(workflowId).catch(() => undefined);
  }

  /**
   * The other workflows running on the service's task queue, counted at most every 5 s. A count that fails
   * keeps the last one: Temporal down refuses the prepare's start anyway.
   */
  private async otherRuns(): Promise<number> {
    if (this.clock() - this.othersAt >= OTHER_RUNS_MAX_AGE_MS) {
      this.counting ??= this.client.workflow
        .count(
          `TaskQueue = '${this.config.temporal.taskQueue}' AND ExecutionStatus = 'Running' AND WorkflowType != '${EXECUTION_WORKFLOW_TYPE}'`,
        )
        .then(
          (answer) => {
            this.others = answer.count;
            this.othersAt = this.clock();
          },
          () => undefined,
        )
        .finally(() => (this.counting = undefined));
      await this.counting;
    }
    return this.others;
  }
}
