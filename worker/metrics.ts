import type { LateNodeEvent, NodeRequestEvent } from '../activities';
import type { ChainEvent } from '../activities/chain';
import type { RefundEvent } from '../activities/refunds';
import type { RefundLedger } from '../db/refund-ledger';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { nodeName } from '../domain/node-names';

/**
 * A late node not heard of for this long is forgotten by this worker: its next attempt (at most
 * 5 minutes of backoff plus a 15 s request later) may have gone to another worker, which counts it.
 */
const LATE_NODE_STALE_MS = 11 * 60_000;

/** What applyToNode's failure says about the node; the ApplicationFailure type, or `error`. */
function failureReason(err: unknown): string {
  const e = err as { type?: unknown; name?: unknown };
  if (typeof e?.type === 'string' && e.type) return e.type;
  if (e?.name === 'CancelledFailure' || e?.name === 'AbortError') return 'Cancelled';
  return 'error';
}

/**
 * The storage-node request metrics in `registry`; returns the recorder that the activities'
 * `onNodeRequest` hook calls. The `node` label is the node's name in `nodes` (STORAGE_NODES), never
 * its URL (decision 0066): an operator maps `node-2` to its address with the configuration.
 */
export function nodeRequestMetrics(registry: Registry, nodes: readonly string[]): (event: NodeRequestEvent) => void {
  const latency = new Histogram({
    name: 'intent_storage_node_request_duration_seconds',
    help: 'Latency of one apply request to a storage node, by node and outcome (ok or failed)',
    labelNames: ['node', 'outcome'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const failures = new Counter({
    name: 'intent_storage_node_failures_total',
    help: 'Failed apply requests to a storage node, by node and reason (NodeUnreachable, NodeTimeout, NodeRejected, NodeBadResponse, Cancelled, error)',
    labelNames: ['node', 'reason'] as const,
    registers: [registry],
  });

  return ({ node: url, seconds, error }: NodeRequestEvent) => {
    const node = nodeName(nodes, url);
    latency.observe({ node, outcome: error === undefined ? 'ok' : 'failed' }, seconds);
    if (error !== undefined) failures.inc({ node, reason: failureReason(error) });
  };
}

/** The worker's metrics, in a registry of their own (a test process may hold several). */
export interface WorkerMetrics {
  readonly registry: Registry;
  /**
   * Records one apply request to a storage node (latency by node and outcome, failures by reason).
   * The activities call it through their `onNodeRequest` hook, so activities/ stays metric-free.
   */
  readonly recordNodeRequest: (event: NodeRequestEvent) => void;
  /** Records a retried attempt at a late node (the activities' `onLateNode` hook). */
  readonly recordLateNode: (event: LateNodeEvent) => void;
  /** Records the chain watcher's rounds, signals and deep reorgs (the activities' `onChainEvent` hook). */
  readonly recordChainEvent: (event: ChainEvent) => void;
  /** Records the refunder's signatures, payments and holds (the refund activities' `onRefundEvent` hook). */
  readonly recordRefundEvent: (event: RefundEvent) => void;
  /** Records a run the Temporal core wedged, after which the worker is recreated (worker/core-wedge.ts). */
  readonly recordCoreWedge: () => void;
  /** Records the read-model catch-up's passes (worker/read-model-catch-up.ts): records written, or a failed pass. */
  readonly recordCatchUp: (outcome: { wrote: number } | { failed: Error }) => void;
}

/**
 * The round age (`intent_chain_round_age_seconds`) past which the watcher is stalled: a round
 * answers within about 15 s (a long poll of at most 5 s, a read budget of 10 s), so twice that
 * without one means rounds fail (the node down or flooded past the watcher's bounds).
 */
export const ROUND_AGE_ALERT_SECONDS = 30;

/** The chain watcher's metrics in `registry`; returns the recorder of the chain activities' `onChainEvent` hook. */
export function chainMetrics(registry: Registry): (event: ChainEvent) => void {
  const head = new Gauge({
    name: 'intent_chain_head_block',
    help: "The chain's head block number, as the watcher's last round on this worker read it",
    labelNames: ['chain'] as const,
    registers: [registry],
  });
  const read = new Gauge({
    name: 'intent_chain_watcher_block',
    help: 'The highest block the watcher read in its last round on this worker (head minus this: how far behind it is)',
    labelNames: ['chain'] as const,
    registers: [registry],
  });
  const signalled = new Counter({
    name: 'intent_chain_deposits_signalled_total',
    help: 'Deposits the chain watcher signalled to their executions after their confirmations',
    labelNames: ['chain'] as const,
    registers: [registry],
  });
  const undelivered = new Counter({
    name: 'intent_chain_deposits_undelivered_total',
    help: 'Confirmed deposits not signalled: their execution was closed or gone, or its record can never take them (each a refunds ledger row)',
    labelNames: ['chain'] as const,
    registers: [registry],
  });
  const dust = new Counter({
    name: 'intent_chain_dust_ignored_total',
    help: 'Transfers below their minAmount owed back without a signal, their address having had its share of them signalled (each a refunds ledger row and a warning)',
    labelNames: ['chain'] as const,
    registers: [registry],
  });
  const reorgs = new Counter({
    name: 'intent_chain_deep_reorgs_total',
    help: 'Signalled deposits whose block was reorganised away (deeper than DEPOSIT_CONFIRMATIONS); each is an error log and a reorged: true on its execution',
    labelNames: ['chain'] as const,
    registers: [registry],
  });
  const voided = new Counter({
    name: 'intent_refunds_voided_total',
    help: 'Refunds ledger rows taken out of due because a reorganisation removed their transfer (each a refund.voided webhook)',
    labelNames: ['chain'] as const,
    registers: [registry],
  });
  const signingWithoutDeposit = new Counter({
    name: 'intent_chain_signing_without_deposit_total',
    help: 'SIGNING executions whose own deposit a reorganisation removed: the operation they sign has no money behind it until the transfer is mined again',
    labelNames: ['chain'] as const,
    registers: [registry],
  });
  const noTraces = new Gauge({
    name: 'intent_chain_no_traces',
    help: "1 once the chain's node answered that it has no call traces: value a contract sends to a deposit address by an internal call is not seen",
    labelNames: ['chain'] as const,
    registers: [registry],
  });
  // Blocks read without their call traces (decision 0090): counted by reason, and the backlog waiting to be traced again.
  const untracedHelp =
    "Blocks the watcher read without their call traces: reason late (the node did not answer them in the round's budget; traced again later, or named by npm run reconcile) or heavy (too many transactions to trace; npm run reconcile names any internal-call deposit in them)";
  const untraced = new Counter({
    name: 'intent_chain_untraced_blocks_total',
    help: untracedHelp,
    labelNames: ['chain', 'reason'] as const,
    registers: [registry],
  });
  const backlogHelp = 'Blocks read without their call traces and not yet traced again: internal-call deposits in them wait';
  const backlog = new Gauge({
    name: 'intent_chain_trace_backlog_blocks',
    help: backlogHelp,
    labelNames: ['chain'] as const,
    registers: [registry],
  });
  // When each chain's last round succeeded on this worker: the age is read at each scrape, so it
  // grows while rounds fail, when the head and watcher gauges stand still.
  const lastRound = new Map<string, number>();
  new Gauge({
    name: 'intent_chain_round_age_seconds',
    help: `Seconds since the chain watcher's last successful round on this worker (alert: the least of every worker's above ${ROUND_AGE_ALERT_SECONDS})`,
    labelNames: ['chain'] as const,
    registers: [registry],
    collect() {
      const now = Date.now();
      for (const [chain, at] of lastRound) this.set({ chain }, (now - at) / 1000);
    },
  });
  return (event: ChainEvent) => {
    if (event.kind === 'round') {
      head.set({ chain: event.chain }, event.head);
      if (event.to !== undefined) read.set({ chain: event.chain }, event.to);
      lastRound.set(event.chain, event.at);
    } else if (event.kind === 'untraced') {
      if (event.untraced > 0) untraced.inc({ chain: event.chain, reason: 'late' }, event.untraced);
      if (event.heavy > 0) untraced.inc({ chain: event.chain, reason: 'heavy' }, event.heavy);
      backlog.set({ chain: event.chain }, event.backlog);
    } else if (event.kind === 'dust') {
      dust.inc({ chain: event.chain }, event.owed);
    } else if (event.kind === 'signals') {
      if (event.delivered > 0) signalled.inc({ chain: event.chain }, event.delivered);
      if (event.undelivered.length > 0) undelivered.inc({ chain: event.chain }, event.undelivered.length);
    } else if (event.kind === 'no-traces') {
      noTraces.set({ chain: event.chain }, 1);
    } else {
      for (const r of event.reports) reorgs.inc({ chain: r.chain });
      const chain = event.reports[0]?.chain ?? 'unknown';
      if (event.voided > 0) voided.inc({ chain }, event.voided);
      if (event.signingWithoutDeposit > 0) signingWithoutDeposit.inc({ chain }, event.signingWithoutDeposit);
    }
  };
}

/** The refunder's metrics in `registry`; returns the recorder of the refund activities' `onRefundEvent` hook. */
export function refundMetrics(registry: Registry): (event: RefundEvent) => void {
  const signed = new Counter({
    name: 'intent_refunds_signed_total',
    help: 'Refunds the service signed (a first transaction at a new nonce)',
    labelNames: ['chain'] as const,
    registers: [registry],
  });
  const replaced = new Counter({
    name: 'intent_refunds_replaced_total',
    help: 'Same-nonce replacements the service signed: a refund at raised fees, or a cancel of a row voided while paying',
    labelNames: ['chain', 'variant'] as const,
    registers: [registry],
  });
  const paid = new Counter({
    name: 'intent_refunds_paid_total',
    help: 'Refunds the service paid, mined and confirmed (while_void: the row was voided meanwhile, money paid for a transfer a reorganisation removed)',
    labelNames: ['chain', 'while_void'] as const,
    registers: [registry],
  });
  const held = new Counter({
    name: 'intent_refunds_held_total',
    help: 'Refunds ledger rows held for a person, by reason (contracts: HOLD_REASONS)',
    labelNames: ['chain', 'reason'] as const,
    registers: [registry],
  });
  const stopped = new Counter({
    name: 'intent_refunds_nonce_mismatch_total',
    help: "Deposit addresses whose nonce was not the refunds ledger's count (a spend by hand, a restored backup): automatic refunds from each stopped (alert on any increase)",
    labelNames: ['chain'] as const,
    registers: [registry],
  });
  const toppedUp = new Counter({
    name: 'intent_refunds_gas_topups_total',
    help: "Top-ups the gas account signed: a token refund's fee sent to its deposit address first",
    labelNames: ['chain'] as const,
    registers: [registry],
  });
  const gasBalance = new Gauge({
    name: 'intent_refunds_gas_account_balance_wei',
    help: "The gas account's balance in wei, read at every refund sweep (alert when it cannot pay a few token refunds' fees)",
    labelNames: ['chain', 'address'] as const,
    registers: [registry],
  });
  return (event: RefundEvent) => {
    if (event.kind === 'signed') signed.inc({ chain: event.chain });
    else if (event.kind === 'replaced') replaced.inc({ chain: event.chain, variant: event.variant });
    else if (event.kind === 'paid') paid.inc({ chain: event.chain, while_void: String(event.whileVoid) });
    else if (event.kind === 'held') held.inc({ chain: event.chain, reason: event.reason }, event.rows);
    else if (event.kind === 'topped-up') toppedUp.inc({ chain: event.chain });
    // A gauge of wei: a float keeps 15 significant digits, enough to alert on.
    else if (event.kind === 'gas-balance') gasBalance.set({ chain: event.chain, address: event.address }, Number(event.wei));
    else stopped.inc({ chain: event.chain });
  };
}

/**
 * The refunds ledger as gauges, read from the read model at each scrape (one grouped query):
 * rows by state and hold reason, and the age of the oldest `due` row. `ledger()` answers the
 * current worker's ledger (a recreated worker opens its read model again); a read model that does
 * not answer leaves the gauges as they were.
 */
export function refundLedgerMetrics(registry: Registry, ledger: () => RefundLedger | undefined): void {
  const rows = new Gauge({
    name: 'intent_refunds_rows',
    help: 'Refunds ledger rows by state (due, held, paying, refunded, waived, void) and hold reason (held rows only)',
    labelNames: ['state', 'hold_reason'] as const,
    registers: [registry],
    async collect() {
      const summary = await ledger()
        ?.summary()
        .catch(() => undefined);
      if (!summary) return;
      this.reset();
      for (const c of summary.counts) this.set({ state: c.state, hold_reason: c.holdReason ?? '' }, c.rows);
      oldestDue.set(summary.oldestDue ? Math.max(0, (Date.now() - Date.parse(summary.oldestDue)) / 1000) : 0);
    },
  });
  const oldestDue = new Gauge({
    name: 'intent_refunds_oldest_due_seconds',
    help: 'Age of the oldest due row of the refunds ledger (0 when none): a row the service does not pay grows it',
    registers: [registry],
  });
  void rows;
}

/**
 * The executions worker's own bound (decision 0107): the runs in its cache and the open runs it
 * takes. `slots()` answers the current worker's (a recreated worker has new ones); none without a
 * bound leaves the gauges unset.
 */
export function openRunsMetrics(registry: Registry, slots: () => { cached: number; bound: number } | undefined): void {
  const bound = new Gauge({
    name: 'intent_worker_open_runs_bound',
    help: 'The open runs this worker takes on the executions task queue (WORKER_OPEN_RUNS); it polls for no new run at that many',
    registers: [registry],
  });
  new Gauge({
    name: 'intent_worker_open_runs',
    help: "Runs in this worker's cache of the executions task queue, against intent_worker_open_runs_bound",
    registers: [registry],
    collect() {
      const now = slots();
      if (!now) return;
      this.set(now.cached);
      bound.set(now.bound);
    },
  });
}

/** Creates the storage node metrics (nodes named by their place in `nodes`) and Node's process metrics. */
export function createWorkerMetrics(nodes: readonly string[]): WorkerMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const recordNodeRequest = nodeRequestMetrics(registry, nodes);

  // batchId → node → when it started waiting and when this worker last tried it.
  const late = new Map<string, Map<string, { sinceMs: number; seenMs: number }>>();
  const prune = (now: number) => {
    for (const [batchId, nodes] of late) {
      for (const [node, entry] of nodes) if (now - entry.seenMs > LATE_NODE_STALE_MS) nodes.delete(node);
      if (nodes.size === 0) late.delete(batchId);
    }
  };
  new Gauge({
    name: 'intent_whitelist_batches_waiting',
    help: 'Whitelist batches whose late storage node this worker is retrying (after a 408 or during a revert)',
    registers: [registry],
    collect() {
      prune(Date.now());
      this.set(late.size);
    },
  });
  new Gauge({
    name: 'intent_whitelist_batch_oldest_wait_seconds',
    help: 'How long the longest-waiting batch of intent_whitelist_batches_waiting has waited for its node (0 when none)',
    registers: [registry],
    collect() {
      const now = Date.now();
      prune(now);
      let oldest = now;
      for (const nodes of late.values()) for (const entry of nodes.values()) oldest = Math.min(oldest, entry.sinceMs);
      this.set((now - oldest) / 1000);
    },
  });
  const recordLateNode = ({ batchId, node, waitingSinceMs, applied }: LateNodeEvent) => {
    const nodes = late.get(batchId) ?? new Map<string, { sinceMs: number; seenMs: number }>();
    if (applied) nodes.delete(node);
    else nodes.set(node, { sinceMs: waitingSinceMs, seenMs: Date.now() });
    if (nodes.size === 0) late.delete(batchId);
    else late.set(batchId, nodes);
  };
  const coreWedges = new Counter({
    name: 'intent_worker_core_wedges_total',
    help: 'Workflow runs the Temporal core reported wedged in this worker; each one recreated the worker (decision 0075)',
    registers: [registry],
  });
  const caughtUp = new Counter({
    name: 'intent_read_model_caught_up_total',
    help: "Execution records the worker's catch-up wrote because their caller never did (an API killed between its Update and its write, another client's Update); a steady rise means APIs die mid-request",
    registers: [registry],
  });
  const catchUpFailures = new Counter({
    name: 'intent_read_model_catch_up_failures_total',
    help: 'Catch-up passes that failed (read model or Temporal unreachable) or could not fetch a record (a run whose worker does not answer); the next pass, 5 s later, tries again',
    registers: [registry],
  });
  return {
    registry,
    recordCatchUp: (outcome) => ('wrote' in outcome ? caughtUp.inc(outcome.wrote) : catchUpFailures.inc()),
    recordNodeRequest,
    recordLateNode,
    recordChainEvent: chainMetrics(registry),
    recordRefundEvent: refundMetrics(registry),
    recordCoreWedge: () => coreWedges.inc(),
  };
}
