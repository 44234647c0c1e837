import { Context } from '@temporalio/activity';
import type { PublicClient } from 'viem';
import type { ChainActivities, ChainRound, UndeliveredDeposit } from '../contracts/activities';
import { parseExecutionWorkflowId } from '../contracts/temporal';
import type { DepositAddressStore } from '../db/deposit-addresses';
import type { ExecutionStore } from '../db/execution-store';
import type { RefundLedger } from '../db/refund-ledger';
import { refundId } from '../db/refund-rows';
import type { WatcherProgressStore } from '../db/watcher-progress';
import {
  initialWatcherState,
  KEPT_WINDOWS,
  resumeNumbers,
  resumeState,
  signalledTransfer,
  transferKey,
  type DepositSignal,
  type ReorgReport,
} from '../domain/chain-watcher';
import { FINAL_STATUSES, markReincluded, markReorged, sameTransfer, type ExecutionRecord } from '../domain/execution-state';
import { DUST_TRANSFERS_PER_ADDRESS, firstPerExecution, isDust, owedReason, pastDustShare, signalVerdict } from '../domain/owed-transfers';
import { chainClient } from '../lib/chain-client';
import { blockHeader, DepositReader } from '../lib/chain-reader';
import { payerKindOf, payerOf, proveOnChain } from '../lib/chain-transaction';
import { mapLimited } from '../lib/map-limited';

/** What the chain activities are told, for the worker's metrics and logs (activities/ keeps no metrics). */
export type ChainEvent =
  | { kind: 'round'; chain: string; head: number; to?: number; transfers: number; at: number }
  /**
   * Blocks read without their call traces this round: `untraced` (their traces did not answer in
   * the round's budget; traced again later) and `heavy` (too many transactions to trace; left to
   * npm run reconcile), and the backlog of untraced blocks the watcher holds after the round.
   */
  | { kind: 'untraced'; chain: string; untraced: number; heavy: number; backlog: number }
  | { kind: 'dust'; chain: string; owed: number }
  | { kind: 'signals'; chain: string; delivered: number; undelivered: UndeliveredDeposit[] }
  /** Deposits reorganised away after they were signalled: rows voided, closed SIGNING executions left without their deposit. */
  | { kind: 'reorgs'; reports: ReorgReport[]; voided: number; signingWithoutDeposit: number }
  /** The node answered that it has no call traces: value sent to deposit addresses by contracts' internal calls is not seen. */
  | { kind: 'no-traces'; chain: string };

export interface ChainDeps {
  rpcUrl: string;
  /** The confirmations of a chain (`evm:<chainId>`); undefined: none configured or known, so no round is read. */
  confirmations: (chain: string) => number | undefined;
  pollIntervalMs: number;
  maxBlocksPerRound: number;
  windowSize: number;
  roundsPerRun: number;
  /** The ERC-20 tokens allowed (DEPOSIT_TOKENS), of every chain: their Transfer logs are read. */
  tokens: ReadonlyArray<{ chain: string; address: string }>;
  /** The deposit addresses the round's transfers are joined with. */
  addresses: DepositAddressStore;
  /** The watcher's last confirmed block and recent signals, where a new run resumes. */
  progress: WatcherProgressStore;
  /** Final records of closed executions, to judge a transfer that reached one. */
  executions: ExecutionStore;
  /** Where a transfer to a closed execution is recorded as owed back. */
  refunds: RefundLedger;
  onChainEvent?: (event: ChainEvent) => void;
}

/** Longest wait for a new block inside one readChainRound (well within its 10 s start-to-close timeout). */
export const MAX_WAIT_MS = 5_000;
/**
 * A round answers whole blocks while they bring at most this many transfers (a batch counts one)
 * and this many bytes of them: its answer stays far below Temporal's payload limit (2 MiB), and so
 * do the watcher's state and the activities' inputs made of it, whatever a block holds.
 */
export const MAX_TRANSFERS_PER_ROUND = 500;
export const MAX_ROUND_BYTES = 256 * 1024;
/**
 * How long a round waits for call traces: a node flooded with transactions answers them slowly,
 * and waiting longer would starve the round's other reads and fail it. Blocks not traced in time
 * are read without traces and traced again in a later round (the watcher's backlog).
 */
export const TRACE_BUDGET_MS = 5_000;
/**
 * The most transactions of a block the watcher traces. A node re-executes a block to trace it and
 * answers little else meanwhile (anvil: about 24 s of a core for 500 token transfers), so tracing
 * a flooded block would stall the watcher, the refunder and the API on the same node. A block with
 * more is read without traces: an internal-call deposit in it is named by npm run reconcile.
 */
export const TRACE_MAX_TRANSACTIONS = 50;
/** A round stops reading at the end of the group of blocks that passes this long (its activity's timeout is 30 s). */
const ROUND_READ_BUDGET_MS = 10_000;
/**
 * Blocks a round reads at once (one batch of blocks, one log query over them): a node flooded with
 * transactions answers a wider query after the client's timeout, and a round that times out reads nothing.
 */
const BLOCKS_PER_GROUP = 4;
/** How often a waiting readChainRound asks the node for its head. */
const HEAD_POLL_MS = 100;

/**
 * The chain watcher's activities (docs/decisions/0071-chain-watcher.md): reads over JSON-RPC with
 * viem, the join with the deposit addresses in the read model, and the reports (logs through the
 * activity logger, metrics through `onChainEvent`). A failure throws and Temporal retries it.
 */
export function createChainActivities(deps: ChainDeps | undefined): ChainActivities {
  let client: PublicClient | undefined;
  const chainDeps = (): ChainDeps => {
    if (!deps) throw new Error('this worker has no CHAIN_RPC_URL');
    return deps;
  };
  // A timed-out request is not sent again on top of itself: the node may still be working on it,
  // and the activity's own retry comes after a backoff.
  const rpc = () => (client ??= chainClient(chainDeps().rpcUrl, { retryCount: 0 }));
  /** The canonical hash of each block number (numbers past the head are left out). */
  const canonicalOf = async (numbers: readonly number[]) => {
    const head = Number(await rpc().getBlockNumber({ cacheTime: 0 }));
    const blocks = await mapLimited(
      numbers.filter((n) => n <= head),
      20,
      (n) => rpc().getBlock({ blockNumber: BigInt(n) }),
    );
    return blocks.map((b) => {
      const h = blockHeader(b);
      return { number: h.number, hash: h.hash };
    });
  };
  /** Signals are kept for this many blocks below the checkpoint: resumeNumbers reads back as far. */
  const keptBlocks = () => KEPT_WINDOWS * chainDeps().windowSize;
  /**
   * Applies `mark` to the final records (in the read model) of closed executions: they hear no
   * signal. Answers the records it changed.
   */
  const markClosedRecords = async <T extends { workflowId: string }>(
    items: readonly T[],
    mark: (record: ExecutionRecord, item: T, at: string) => ExecutionRecord,
    at: Date,
  ): Promise<Array<{ item: T; record: ExecutionRecord }>> => {
    const { executions } = chainDeps();
    const records = await executions.getMany([...new Set(items.map((i) => i.workflowId))]);
    const changed: Array<{ item: T; record: ExecutionRecord }> = [];
    for (const item of items) {
      const record = records.get(item.workflowId);
      if (!record || !FINAL_STATUSES.includes(record.status)) continue;
      const next = mark(record, item, at.toISOString());
      if (next === record) continue;
      await executions.upsert(item.workflowId, next, at);
      records.set(item.workflowId, next);
      changed.push({ item, record: next });
    }
    return changed;
  };
  const readers = new Map<string, DepositReader>();
  const reader = (chain: string): DepositReader => {
    let r = readers.get(chain);
    if (!r) {
      const d = chainDeps();
      const tokens = d.tokens.filter((t) => t.chain === chain).map((t) => t.address.toLowerCase());
      r = new DepositReader(rpc(), d.addresses, tokens, () => {
        Context.current().log.warn(
          "the chain's node offers no call traces (debug_traceBlockByHash): value a contract sends to a deposit address by an internal call is not seen; such deposits are reported by hand",
          { chain },
        );
        d.onChainEvent?.({ kind: 'no-traces', chain });
      });
      readers.set(chain, r);
    }
    return r;
  };

  return {
    async watcherStart({ chain }) {
      const d = chainDeps();
      const params = { chain, confirmations: d.confirmations(chain) ?? 1, windowSize: d.windowSize };
      const checkpoint = await d.progress.checkpoint(chain);
      if (!checkpoint) {
        const h = blockHeader(await rpc().getBlock({ blockTag: 'latest' }));
        // Nothing at or below the first block is this watcher's: its first checkpoint.
        await d.progress.saveCheckpoint(chain, h, keptBlocks());
        return { state: initialWatcherState(h), reorged: [] };
      }
      const signalled = await d.progress.signals(chain);
      const canonical = await canonicalOf(resumeNumbers(checkpoint, signalled, params));
      const resumed = resumeState(checkpoint, signalled, new Map(canonical.map((b) => [b.number, b.hash])), params);
      Context.current().log.info('chain watcher resumes from the read model', {
        chain,
        checkpoint: checkpoint.number,
        from: resumed.state.cursor,
        reorgedMeanwhile: resumed.reorged.length,
      });
      return resumed;
    },

    async readChainRound({ chain, from, waitAfter, checkpoint, untraced: backlog = [], room }): Promise<ChainRound> {
      const d = chainDeps();
      // A watcher started elsewhere waits (retried) rather than signal with a guessed depth.
      const confirmations = d.confirmations(chain);
      if (confirmations === undefined) throw new Error(`this worker has no DEPOSIT_CONFIRMATIONS for ${chain}`);
      // The previous round's signals are delivered and its owed transfers recorded: its last confirmed block is safe to resume from.
      if (checkpoint) await d.progress.saveCheckpoint(chain, checkpoint, keptBlocks());
      let head = Number(await rpc().getBlockNumber({ cacheTime: 0 }));
      // Caught up: wait here for the next block (a long poll), up to the poll interval. A Temporal
      // timer would do the same with a history event more, at the server's timer resolution (~1 s).
      const deadline = Date.now() + Math.min(d.pollIntervalMs, MAX_WAIT_MS);
      while (waitAfter !== undefined && head <= waitAfter && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, Math.min(HEAD_POLL_MS, Math.max(1, deadline - Date.now()))));
        head = Number(await rpc().getBlockNumber({ cacheTime: 0 }));
      }
      const to = Math.min(head, from + d.maxBlocksPerRound - 1);
      const numbers = to >= from ? Array.from({ length: to - from + 1 }, (_, i) => from + i) : [];
      const { headers, transfers, serviceTransfers, untraced, traced, heavy } = await reader(chain).read(
        chain,
        numbers,
        BLOCKS_PER_GROUP,
        {
          transfers: Math.min(MAX_TRANSFERS_PER_ROUND, room ?? Infinity),
          bytes: MAX_ROUND_BYTES,
          deadline: Date.now() + ROUND_READ_BUDGET_MS,
          traceDeadline: Date.now() + TRACE_BUDGET_MS,
          traceMaxTransactions: TRACE_MAX_TRANSACTIONS,
        },
        backlog,
      );
      if (untraced.length > 0)
        Context.current().log.warn(
          "blocks read without their call traces: the node did not answer them in the round's budget; they are traced again later",
          { chain, blocks: untraced.map((b) => b.number), backlog: backlog.length },
        );
      if (heavy.length > 0)
        Context.current().log.warn(
          'blocks read without their call traces: too many transactions to trace without stalling the node; npm run reconcile over them names any internal-call deposit',
          { chain, blocks: heavy.map((b) => b.number), maxTransactions: TRACE_MAX_TRANSACTIONS },
        );
      if (untraced.length > 0 || heavy.length > 0 || backlog.length > 0)
        d.onChainEvent?.({
          kind: 'untraced',
          chain,
          untraced: untraced.length,
          heavy: heavy.length,
          backlog: backlog.length - traced.length + untraced.length,
        });
      for (const t of serviceTransfers.slice(0, 10))
        Context.current().log.info('transfer from a deposit address to another left out: the service sent it, it is no deposit', {
          chain,
          txHash: t.txHash,
          transferIndex: t.transferIndex,
          from: t.from,
          to: t.to,
          workflowId: t.workflowId,
        });
      const last = headers[headers.length - 1]?.number;
      d.onChainEvent?.({ kind: 'round', chain, head, to: last, transfers: transfers.length, at: Date.now() });
      return {
        head,
        blocks: headers,
        transfers,
        ...(untraced.length > 0 ? { untraced } : {}),
        ...(traced.length > 0 ? { traced } : {}),
        confirmations,
        pollIntervalMs: d.pollIntervalMs,
        windowSize: d.windowSize,
        roundsPerRun: d.roundsPerRun,
      };
    },

    async canonicalHashes({ numbers }) {
      return canonicalOf(numbers);
    },

    async reportReorgs({ reports }) {
      const { refunds } = chainDeps();
      const at = new Date();
      // Money a reorganisation removed is owed to nobody: its rows leave `due` (a refund.voided follows).
      const { voided, settled } = await refunds.void(reports.map(refundId), 'reorged', at);
      if (reports.length > 0) await chainDeps().progress.forgetSignals(reports[0].chain, reports);
      for (const id of settled)
        Context.current().log.error(
          'a settled refunds ledger row lost its transfer to a reorganisation: the refund paid money the chain no longer shows',
          {
            refundId: id,
          },
        );
      for (const r of reports)
        Context.current().log.error('deposit reorganised away after it was signalled: its block is no longer canonical', { ...r });
      // A closed execution hears no signal: its final record in the read model is flagged instead.
      const flagged = await markClosedRecords(reports, markReorged, at);
      const signingWithout = flagged.filter(
        ({ item, record }) => record.status === 'SIGNING' && record.deposit !== undefined && sameTransfer(record.deposit, item),
      ).length;
      deps?.onChainEvent?.({ kind: 'reorgs', reports, voided: voided.length, signingWithoutDeposit: signingWithout });
    },

    async sortDeposits({ signals }) {
      const { executions, addresses } = chainDeps();
      const records = await executions.getMany([...new Set(signals.map((s) => s.workflowId))]);
      const at = new Date().toISOString();
      const sendable: DepositSignal[] = [];
      // Signalled although they can never complete the deposit (within their address's share).
      const dustSent: DepositSignal[] = [];
      const owed: UndeliveredDeposit[] = [];
      let dust = 0;
      for (const signal of signals) {
        const judged = signalVerdict(records.get(signal.workflowId), signal, at);
        if (judged.verdict === 'send') sendable.push(signal);
        else if (judged.verdict === 'owed') {
          const { verdict: _verdict, ...why } = judged;
          owed.push({ signal, ...why });
        } else if (judged.verdict === 'dust') {
          if (await addresses.takeDustSignal(signal.deposit.chain, signal.to, DUST_TRANSFERS_PER_ADDRESS)) dustSent.push(signal);
          else {
            dust++;
            Context.current().log.warn(
              'transfer below minAmount (or of another asset) owed back without a signal: its address had its share of them signalled',
              {
                workflowId: signal.workflowId,
                txHash: signal.deposit.txHash,
                amount: signal.deposit.amount,
              },
            );
            owed.push({ signal, ...pastDustShare(judged.outcome) });
          }
        }
      }
      if (dust > 0) deps?.onChainEvent?.({ kind: 'dust', chain: signals[0].deposit.chain, owed: dust });
      const { send, later } = firstPerExecution(sendable, (s) => records.get(s.workflowId)?.deposit === undefined);
      for (const signal of later)
        owed.push({ signal, reason: 'another transfer of the round came first to its execution', laterInRound: true });
      return { send: [...send, ...dustSent], owed };
    },

    async checkDeposit({ target, deposit }) {
      const d = chainDeps();
      return proveOnChain(rpc(), target, deposit, d.confirmations(target.chain), d.tokens, (chain, a) =>
        d.addresses.servicePayers(chain, a),
      );
    },

    async reportSignals({ chain, delivered, undelivered, sent = [] }) {
      const { executions, refunds } = chainDeps();
      const at = new Date();
      const records = undelivered.length > 0 ? await executions.getMany(undelivered.map((u) => u.signal.workflowId)) : new Map();
      // Where a refund would go back to: each transfer's payer, read with it (asked again for a
      // signal of an older build's state; a dust batch has many), and whether it has code, in batched requests.
      const senders = await Promise.all(
        undelivered.map(({ signal: s }) =>
          s.transfers !== undefined ? undefined : (s.from ?? payerOf(rpc(), s.deposit.txHash, s.deposit.transferIndex, s.deposit.asset)),
        ),
      );
      const kinds = await Promise.all(senders.map((s) => (s === undefined ? undefined : payerKindOf(rpc(), s))));
      for (const [i, u] of undelivered.entries()) {
        const { workflowId, deposit } = u.signal;
        const sender = senders[i];
        const payerKind = kinds[i];
        const record = records.get(workflowId);
        const reason = u.laterInRound ? 'other-tx' : owedReason(u.signal, record, at.toISOString());
        if (reason === undefined) continue;
        const ids = parseExecutionWorkflowId(workflowId);
        const id = await refunds.recordDue({
          workflowId,
          wallet: record?.wallet ?? ids?.wallet ?? '',
          executionId: record?.executionId ?? ids?.executionId ?? '',
          ...deposit,
          ...(sender === undefined ? {} : { sender }),
          ...(payerKind === undefined ? {} : { payerKind }),
          asset: deposit.asset,
          reason,
          reportedBy: 'chain-watcher',
          ...(u.signal.transfers === undefined ? {} : { transfers: u.signal.transfers }),
          // Past its address's share, a transfer it can never take is dust: never paid back without a person.
          ...(isDust(u) ? { holdReason: 'too-small' as const } : {}),
          // A surplus batch has many payers and no one destination: a person pays it back.
          ...(u.signal.surplus ? { holdReason: 'no-destination' as const } : {}),
        });
        Context.current().log.warn('deposit its execution cannot take (closed, or its record refuses it): recorded in the refunds ledger', {
          workflowId,
          ...deposit,
          refundId: id,
          reason: u.reason,
        });
      }
      // Every transfer of the round (a signal that could not be delivered is in both lists: once) is
      // canonical and confirmed: a row a reorganisation voided is owed again.
      const round = [
        ...new Map([...sent, ...undelivered.map((u) => u.signal)].map((s) => [transferKey({ ...s.deposit, to: s.to }), s])).values(),
      ];
      const transfers = round.map(signalledTransfer);
      await chainDeps().progress.saveSignals(chain, transfers);
      const restored = await refunds.restore(transfers.map((t) => refundId({ ...t, chain })));
      if (restored.length > 0)
        Context.current().log.warn('transfers mined again after a reorganisation: their refunds ledger rows are due again', { restored });
      // A closed execution whose flagged deposit is back: its final record loses the flag.
      await markClosedRecords(transfers, markReincluded, at);
      deps?.onChainEvent?.({ kind: 'signals', chain, delivered, undelivered });
    },
  };
}
