import { continueAsNew, getExternalWorkflowHandle, log, proxyActivities, setHandler, sleep, workflowInfo } from '@temporalio/workflow';
import type { Activities, ChainRound, UndeliveredDeposit } from '../contracts/activities';
import {
  applyRound,
  confirmedCheckpoint,
  nextRoundFrom,
  rewind,
  rewindNumbers,
  roundRoom,
  type DepositSignal,
  type WatcherParams,
  type BlockRef,
  type ReorgReport,
  type WatcherState,
} from '../domain/chain-watcher';
import { chainWatcherStateQuery, depositCompletedSignal, depositReorgedSignal, type ChainWatcherInput } from '../contracts/temporal';

// Chain reads: bounded attempts (a round stops reading after 10 s of it), retried for ever (a node
// that is down only delays deposits; the watcher's state stays in its history meanwhile).
const { watcherStart, readChainRound, canonicalHashes } = proxyActivities<Activities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s' },
});
const { reportReorgs, reportSignals, sortDeposits } = proxyActivities<Activities>({
  startToCloseTimeout: '10s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' },
});

/** The longest a readChainRound waits for a new block (activities/chain.ts MAX_WAIT_MS). */
const MAX_ACTIVITY_WAIT_MS = 5_000;
/** Rounds per run before continue-as-new until the first round brings the worker's CHAIN_ROUNDS_PER_RUN. */
const DEFAULT_ROUNDS_PER_RUN = 500;

/**
 * One chain's deposit watcher (docs/decisions/0071-chain-watcher.md), id `chain-watcher:<chain>`,
 * started by every worker with USE_EXISTING so that one runs per chain. Its progress (cursor, the
 * window of recent block hashes, transfers seen but not yet deep enough, deposits signalled within
 * the window) lives here, in the workflow's state, so a worker crash neither misses nor repeats a
 * deposit. Its last confirmed block and recent signals are also kept in the read model, where a
 * new run (after the watcher failed or was terminated) resumes instead of at the head (decision
 * 0080). Activities read the chain (a caught-up round waits in its activity for the next block,
 * up to CHAIN_POLL_INTERVAL_MS), the pure state machine of domain/chain-watcher decides, and
 * each deposit is signalled to its execution with a workflow command, once per history.
 */
export async function chainWatcherWorkflow(input: ChainWatcherInput): Promise<void> {
  const { chain } = input;
  let state: WatcherState;
  if (input.state) state = input.state;
  else {
    const start = await watcherStart({ chain });
    state = start.state;
    await reportReorged(start.reorged);
  }
  let signalledTotal = input.signalledTotal ?? 0;

  setHandler(chainWatcherStateQuery, () => ({
    chain,
    cursor: state.cursor,
    windowFrom: state.window[0]?.number,
    pending: state.pending,
    signalledInWindow: state.signalled.length,
    signalledTotal,
  }));

  // Caught up with the head: the next round's activity waits for a block past the cursor.
  let caughtUp = false;
  let roundsPerRun = DEFAULT_ROUNDS_PER_RUN;
  // The last confirmed block, recorded in the read model by the next round once it moves.
  let confirmations: number | undefined;
  let saved: BlockRef | undefined;
  for (let round = 0; ; round++) {
    const info = workflowInfo();
    if (round >= roundsPerRun || info.continueAsNewSuggested || info.targetWorkerDeploymentVersionChanged) {
      // A new version of the worker takes the watcher over at the next run (it is the one workflow that never ends).
      await continueAsNew<typeof chainWatcherWorkflow>({ chain, state, signalledTotal });
    }
    const checkpoint = confirmations === undefined ? undefined : confirmedCheckpoint(state, confirmations);
    const moved = checkpoint !== undefined && (checkpoint.number !== saved?.number || checkpoint.hash !== saved.hash);
    const read: ChainRound = await readChainRound({
      chain,
      from: nextRoundFrom(state),
      waitAfter: caughtUp ? state.cursor : undefined,
      ...(moved ? { checkpoint } : {}),
      ...(state.untraced ? { untraced: state.untraced } : {}),
      room: roundRoom(state),
    });
    if (moved) saved = checkpoint;
    roundsPerRun = read.roundsPerRun;
    confirmations = read.confirmations;
    const params: WatcherParams = { chain, confirmations: read.confirmations, windowSize: read.windowSize };
    const outcome = applyRound(state, read.blocks, read.transfers, params, { untraced: read.untraced, traced: read.traced });
    state = outcome.state;
    if (outcome.abandoned.length > 0)
      log.warn('blocks left the watcher window without their call traces: npm run reconcile names any internal-call deposit in them', {
        chain,
        blocks: outcome.abandoned.map((b) => b.number),
      });
    if (outcome.needsRewind) {
      const canonical = await canonicalHashes({ chain, numbers: rewindNumbers(state) });
      const rewound = rewind(state, new Map(canonical.map((b) => [b.number, b.hash])), params);
      state = rewound.state;
      log.warn('chain reorganisation: rewound to the fork point', { chain, forkPoint: rewound.forkPoint, cursor: state.cursor });
      await reportReorged(rewound.reorged);
    }
    await reportReorged(outcome.reorged);
    if (outcome.signals.length > 0) {
      // Only what the execution may take is signalled; the rest is owed back without touching it.
      const { send, owed } = await sortDeposits({ signals: outcome.signals });
      const undelivered = send.length > 0 ? await deliver(send) : [];
      signalledTotal += send.length - undelivered.length;
      await reportSignals({ chain, delivered: send.length - undelivered.length, undelivered: [...owed, ...undelivered], sent: send });
    }
    caughtUp = !outcome.needsRewind && state.cursor >= read.head;
    // The activity waits at most 5 s for a block; a longer poll interval sleeps the rest.
    if (caughtUp && read.pollIntervalMs > MAX_ACTIVITY_WAIT_MS) await sleep(read.pollIntervalMs - MAX_ACTIVITY_WAIT_MS);
  }
}

/**
 * Tells each execution (a closed one cannot hear it: reportReorgs flags its record) and the
 * refunds ledger that a signalled transfer's block was reorganised away.
 */
async function reportReorged(reports: ReorgReport[]): Promise<void> {
  if (reports.length === 0) return;
  await Promise.all(
    reports
      .filter((r) => r.transfers === undefined)
      .map((r) =>
        getExternalWorkflowHandle(r.workflowId)
          .signal(depositReorgedSignal, {
            txHash: r.txHash,
            transferIndex: r.transferIndex,
            chain: r.chain,
            blockNumber: r.blockNumber,
            blockHash: r.blockHash,
            asset: r.asset,
          })
          .catch(() => undefined),
      ),
  );
  await reportReorgs({ reports });
}

/** Signals each deposit to its execution; answers the ones whose execution could not take it (closed, or no such workflow). */
async function deliver(signals: DepositSignal[]): Promise<UndeliveredDeposit[]> {
  const results = await Promise.all(
    signals.map((s) =>
      getExternalWorkflowHandle(s.workflowId)
        .signal(depositCompletedSignal, s.deposit)
        .then(
          () => undefined,
          (err: Error): UndeliveredDeposit => ({ signal: s, reason: err.message }),
        ),
    ),
  );
  return results.filter((r): r is UndeliveredDeposit => r !== undefined);
}
