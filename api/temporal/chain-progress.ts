import type { Client } from '@temporalio/client';
import { chainWatcherStateQuery, chainWatcherWorkflowId, type ChainWatcherView } from '../../contracts/temporal';
import type { ExecutionRecord } from '../../domain/execution-record';
import { SharedProbe } from '../../lib/shared-probe';
import { confirmingOf, statusReason, type Confirming, type StatusReason } from '../../domain/status-reason';
import { withinMs } from './call';

/** What the API's chain access tells of a chain (DepositDeps: DEPOSIT_CONFIRMATIONS, the node, the read model's checkpoint). */
export interface ChainFacts {
  confirmations(chain: string): number | undefined;
  transactionBlock(txHash: string): Promise<number | undefined>;
  checkpoint(chain: string): Promise<number | undefined>;
  /** Whether the watcher recorded a transfer of `txHash` (lowercase) on `chain` as signalled or owed, near its checkpoint. */
  signalled(chain: string, txHash: string): Promise<boolean>;
  /** The chain the node serves (`evm:<chainId>`): the one chain this deployment's watcher reads. */
  chain(): Promise<string>;
}

/** How long a page or a GET waits for the chain watcher's word before it answers without it. */
const WATCHER_QUERY_MS = 1_500;
/**
 * How long one answer of the watcher (or its silence) serves every read of this process. Public
 * reads of PREPARED executions and transaction pages ask for it, at whatever rate the internet
 * sends them; the watcher runs one per chain for everybody, and each query is a task its worker
 * runs. So the API asks each chain's watcher at most once a second, whatever the rate.
 */
export const WATCHER_VIEW_MAX_AGE_MS = 1_000;

/** Where a transaction stands for the chain watcher: not yet read, read and short of its confirmations, or past them. */
export type TransactionProgress =
  | { kind: 'unknown' }
  | { kind: 'not-reached'; seenUpTo: number; blockNumber: number; needed: number }
  | { kind: 'confirming'; seenUpTo: number; blockNumber: number; seen: number; needed: number }
  | { kind: 'settling'; seenUpTo: number; blockNumber: number }
  | { kind: 'past'; seenUpTo: number; blockNumber: number };

/** Asks a chain's watcher for its view; undefined when it does not answer. */
export type WatcherQuery = (chain: string) => Promise<ChainWatcherView | undefined>;

/** The watcher's query through Temporal, given WATCHER_QUERY_MS to answer. */
export function watcherQuery(client: Client): WatcherQuery {
  return async (chain) => {
    try {
      return await withinMs(client, WATCHER_QUERY_MS, () =>
        client.workflow.getHandle(chainWatcherWorkflowId(chain)).query(chainWatcherStateQuery),
      );
    } catch {
      return undefined;
    }
  };
}

/**
 * What the chain watcher knows of deposits not yet deep enough: the status reason's "confirming
 * n of N" and the transaction page's "seen up to block X". Best effort: a watcher that does not
 * answer in time (or no chain at all) gives nothing, never an error.
 */
export class ChainProgress {
  /** The served chain's watcher, asked at most once per WATCHER_VIEW_MAX_AGE_MS. */
  private served?: { chain: string; probe: SharedProbe<ChainWatcherView | undefined> };

  constructor(
    private readonly query: WatcherQuery,
    private readonly deposits?: ChainFacts,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * The watcher's view of `chain` (at most WATCHER_VIEW_MAX_AGE_MS old), or undefined: no chain,
   * a chain this deployment does not watch, or no answer within WATCHER_QUERY_MS. While the node
   * has not yet told its chain, the watcher is asked on each call.
   */
  async view(chain: string): Promise<ChainWatcherView | undefined> {
    if (!this.deposits) return undefined;
    const served = await this.deposits.chain().catch(() => undefined);
    if (served === undefined) return this.query(chain);
    if (served !== chain) return undefined;
    if (this.served?.chain !== served)
      this.served = { chain: served, probe: new SharedProbe(() => this.query(served), WATCHER_VIEW_MAX_AGE_MS, this.now) };
    return this.served.probe.get();
  }

  /** DEPOSIT_CONFIRMATIONS of `chain`; undefined without a chain or a number for it. */
  confirmationsOf(chain: string): number | undefined {
    return this.deposits?.confirmations(chain);
  }

  /** A transfer to `record`'s deposit address the watcher has read and not yet signalled, with its depth. */
  async confirming(record: ExecutionRecord): Promise<Confirming | undefined> {
    const target = record.depositTarget;
    if (!target || record.status !== 'PREPARED' || !this.deposits) return undefined;
    const needed = this.deposits.confirmations(target.chain);
    const view = needed === undefined ? undefined : await this.view(target.chain);
    return view && needed !== undefined ? confirmingOf(record, view.pending, view.cursor, needed) : undefined;
  }

  /** Where transaction `txHash` on `chain` stands for the watcher (the chain's node asked for its block when the watcher holds none of it). */
  async transaction(chain: string, txHash: string): Promise<TransactionProgress> {
    const needed = this.deposits?.confirmations(chain);
    if (needed === undefined) return { kind: 'unknown' };
    const view = await this.view(chain);
    if (!view) return this.fromCheckpoint(chain, txHash, needed);
    const held = view.pending.find((t) => t.txHash.toLowerCase() === txHash);
    if (held)
      return {
        kind: 'confirming',
        seenUpTo: view.cursor,
        blockNumber: held.blockNumber,
        seen: Math.max(1, view.cursor - held.blockNumber + 1),
        needed,
      };
    const blockNumber = await this.deposits!.transactionBlock(txHash).catch(() => undefined);
    if (blockNumber === undefined) return { kind: 'unknown' };
    if (blockNumber > view.cursor) return { kind: 'not-reached', seenUpTo: view.cursor, blockNumber, needed };
    // Read and not held: a transfer of it may be on its way to its execution (signalled, not yet
    // written), until the watcher's checkpoint, saved after the round that signalled it, passes its block.
    const [signalled, checkpoint] = await Promise.all([
      this.deposits!.signalled(chain, txHash).catch(() => true),
      this.deposits!.checkpoint(chain).catch(() => undefined),
    ]);
    if (signalled || checkpoint === undefined || checkpoint < blockNumber) return { kind: 'settling', seenUpTo: view.cursor, blockNumber };
    return { kind: 'past', seenUpTo: view.cursor, blockNumber };
  }

  /**
   * Without the watcher's word (no worker answers its query): the last block it confirmed, as the
   * read model keeps it. Only "not reached" can be told from it; a transaction at or below it may
   * still be on its way to its execution.
   */
  private async fromCheckpoint(chain: string, txHash: string, needed: number): Promise<TransactionProgress> {
    const deposits = this.deposits!;
    const [checkpoint, blockNumber] = await Promise.all([
      deposits.checkpoint(chain).catch(() => undefined),
      deposits.transactionBlock(txHash).catch(() => undefined),
    ]);
    if (checkpoint === undefined || blockNumber === undefined || blockNumber <= checkpoint) return { kind: 'unknown' };
    return { kind: 'not-reached', seenUpTo: checkpoint, blockNumber, needed };
  }
}

/** `records` each with its status reason; the watcher is asked once per chain, and only when a PREPARED record takes an on-chain deposit. */
export async function withReasons<R extends ExecutionRecord>(
  progress: ChainProgress,
  records: readonly R[],
): Promise<Array<R & { statusReason: StatusReason }>> {
  const chains = [...new Set(records.filter((r) => r.status === 'PREPARED' && r.depositTarget).map((r) => r.depositTarget!.chain))];
  const views = new Map(await Promise.all(chains.map(async (c) => [c, await progress.view(c)] as const)));
  return records.map((r) => {
    const target = r.depositTarget;
    const view = target && views.get(target.chain);
    const needed = target && progress.confirmationsOf(target.chain);
    const confirming = view && needed !== undefined ? confirmingOf(r, view.pending, view.cursor, needed) : undefined;
    return { ...r, statusReason: statusReason(r, confirming) };
  });
}
