import { Context } from '@temporalio/activity';
import { createPublicClient, http, type PublicClient } from 'viem';
import type { ChainActivities, ChainRound } from '../contracts/activities';
import type { DepositAddressOwner, DepositAddressStore } from '../db/deposit-addresses';
import type { WatcherProgressStore } from '../db/watcher-progress';
import { dustBatches } from '../domain/dust-batches';
import type { ExecutionStore } from '../db/execution-store';
import type { RefundLedger } from '../db/refund-ledger';
import {
  applyDeposit,
  closedDepositRefusal,
  FINAL_STATUSES,
  holds,
  markReincluded,
  markReorged,
  sameTransfer,
  type DepositAsset,
  type ExecutionRecord,
} from '../domain/execution-state';
import { refundId } from '../db/refund-ledger';
import type { PayerKind } from '../domain/payer-kind';
import { isMissingMethod, offersTraces, payerKindOf, payerOf, proveOnChain } from '../lib/chain-transaction';
import { addressTopic, internalValueTransfers, tokenTransfer, TRANSFER_TOPIC, type CallFrame } from '../domain/transfers';
import {
  initialWatcherState,
  KEPT_WINDOWS,
  resumeNumbers,
  resumeState,
  signalledTransfer,
  transferKey,
  type BlockHeader,
  type ChainTransfer,
  type DepositSignal,
  type ReorgReport,
} from '../domain/chain-watcher';
import type { UndeliveredDeposit } from '../contracts/activities';

/** What the chain activities are told, for the worker's metrics and logs (activities/ keeps no metrics). */
export type ChainEvent =
  | { kind: 'round'; chain: string; head: number; to?: number; transfers: number }
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

/** A viem client for one JSON-RPC URL: calls of one tick go out as one batch request, each request bounded. */
export function chainClient(rpcUrl: string): PublicClient {
  return createPublicClient({ transport: http(rpcUrl, { batch: { batchSize: 100 }, timeout: 10_000, retryCount: 1 }) });
}

/**
 * The payer of a transfer on the chain behind `rpcUrl` and whether it has code, for a refunds
 * ledger row (where a refund goes back to): undefined for a row of another chain, or a transfer
 * the node does not know.
 */
export function payerLookup(
  rpcUrl: string,
): (
  chain: string,
  txHash: string,
  transferIndex: number,
  asset: DepositAsset,
) => Promise<{ sender: string; payerKind: PayerKind } | undefined> {
  let client: PublicClient | undefined;
  let chainId: Promise<number> | undefined;
  return async (chain, txHash, transferIndex, asset) => {
    client ??= chainClient(rpcUrl);
    chainId ??= client.getChainId().catch((err: unknown) => {
      chainId = undefined;
      throw err;
    });
    if (chain !== `evm:${await chainId}`) return undefined;
    const sender = await payerOf(client, txHash, transferIndex, asset);
    return sender === undefined ? undefined : { sender, payerKind: await payerKindOf(client, sender) };
  };
}

/**
 * Transfers below its minAmount that the watcher signals for one deposit address; later ones go to
 * the refunds ledger without a signal (a warning and `intent_chain_dust_ignored_total`). Such a
 * transfer can never complete a deposit, and each signalled one is a history event and a projection
 * of its execution: without a cap, anyone who reads an address could grow its execution with 1-wei
 * transfers.
 */
export const DUST_TRANSFERS_PER_ADDRESS = 10;

/** Longest wait for a new block inside one readChainRound (well within its 10 s start-to-close timeout). */
export const MAX_WAIT_MS = 5_000;
/**
 * A round stops reading at the end of the group of blocks that brings this many transfers (a dust
 * batch counts one): its answer stays far below Temporal's payload limit (2 MiB) whatever a block holds.
 */
export const MAX_TRANSFERS_PER_ROUND = 500;
/** A round stops reading at the end of the group of blocks that passes this long (its activity's timeout is 30 s). */
const ROUND_READ_BUDGET_MS = 10_000;
/** How often a waiting readChainRound asks the node for its head. */
const HEAD_POLL_MS = 100;

/** A block's header as the watcher keeps it; throws for a pending block (no number or hash yet). */
function blockHeader(b: { number: bigint | null; hash: `0x${string}` | null; parentHash: `0x${string}` }): BlockHeader {
  if (b.number === null || b.hash === null) throw new Error('the node answered a pending block');
  return { number: Number(b.number), hash: b.hash.toLowerCase(), parentHash: b.parentHash.toLowerCase() };
}

/** The top-level native transfers of a block's transactions (transferIndex 0), each with its recipient and payer (tx.from) in lowercase. */
function topLevelTransfers(
  block: { transactions: ReadonlyArray<{ from: `0x${string}`; to: `0x${string}` | null; value: bigint; hash: `0x${string}` }> },
  h: BlockHeader,
): Candidate[] {
  return block.transactions
    .filter((tx) => tx.to !== null && tx.value !== 0n)
    .map((tx) => ({
      blockNumber: h.number,
      blockHash: h.hash,
      txHash: tx.hash.toLowerCase(),
      transferIndex: 0,
      asset: 'native' as const,
      to: tx.to!.toLowerCase(),
      amount: tx.value.toString(),
      from: tx.from.toLowerCase(),
    }));
}

type Candidate = Omit<ChainTransfer, 'workflowId'>;

/** What DepositReader.read answers: the blocks' headers, the transfers to deposit addresses, and those of them a deposit address paid. */
export interface DepositRead {
  headers: BlockHeader[];
  transfers: ChainTransfer[];
  /** Transfers to a deposit address whose payer is a deposit address of the chain: the service's own, never deposits. */
  serviceTransfers: ChainTransfer[];
}

/** Topics per `eth_getLogs` request (an OR-list of recipients), and the most addresses filtered by topic at all. */
const TOPICS_PER_REQUEST = 1_000;
const MAX_TOPIC_ADDRESSES = 10_000;

/**
 * What the watcher's round and the reconciler read from a chain besides blocks: the ERC-20
 * `Transfer` logs of the allowed tokens and, where the node has them, the call traces of the
 * blocks (native value moved by contracts' internal calls). Keeps, per process, the chain's
 * deposit addresses (re-read when their count changes) and whether the node answers traces.
 */
export class DepositReader {
  private known?: { count: number; topics: string[] };
  /** undefined until the node was asked (at the first read, and again while it could not answer). */
  private tracesOffered?: boolean;
  /** Whether the node answers eth_getBlockReceipts; undefined until asked. */
  private blockReceipts?: boolean;

  constructor(
    private readonly client: PublicClient,
    private readonly addresses: DepositAddressStore,
    /** The allowed tokens of the chain read (lowercase addresses). */
    private readonly tokens: readonly string[],
    /** Told once, the first time the node answers that it has no call traces. */
    private readonly onNoTraces?: () => void,
  ) {}

  /** Whether the node answers call traces; undefined before the first read. */
  get traces(): boolean | undefined {
    return this.tracesOffered;
  }

  /**
   * Blocks `numbers` (`concurrency` reads at once, in order) as headers, and the transfers in them
   * that pay one of `chain`'s deposit addresses, each with its execution: top-level native
   * transfers, native value moved by internal calls (call traces), and Transfer logs of the allowed
   * tokens. Bounded, so that no flood of transfers can make one round's answer too big for
   * Temporal or too slow for its activity: zero transfers are dropped, the transfers an address can
   * never take are summed per block (dustBatches), and the read stops at the end of the first
   * group of blocks that brings `limits.transfers` transfers or passes `limits.deadline` (the
   * blocks after it are the next round's). A transfer whose payer is one of `chain`'s deposit
   * addresses is the service's own (a refund or a cancel, signed with a key derived from the seed)
   * and never a deposit nor money owed: it is left out of `transfers` and answered apart, one
   * entry each, in `serviceTransfers` (reconcile labels them).
   */
  async read(
    chain: string,
    numbers: readonly number[],
    concurrency: number,
    limits: { transfers: number; deadline: number } = { transfers: Infinity, deadline: Infinity },
  ): Promise<DepositRead> {
    // Asked before any block needs it, so that a node without traces is told at the watcher's first round.
    if (this.tracesOffered === undefined) {
      const offered = await offersTraces(this.client);
      if (offered === false) this.noTraces();
      else this.tracesOffered = offered;
    }
    const headers: BlockHeader[] = [];
    const transfers: ChainTransfer[] = [];
    const serviceTransfers: ChainTransfer[] = [];
    for (let i = 0; i < numbers.length; i += concurrency) {
      const part = await this.readBlocks(chain, numbers.slice(i, i + concurrency), concurrency);
      headers.push(...part.headers);
      transfers.push(...part.transfers);
      serviceTransfers.push(...part.serviceTransfers);
      if (transfers.length >= limits.transfers || Date.now() >= limits.deadline) break;
    }
    return { headers, transfers, serviceTransfers };
  }

  /** read() for one group of blocks. */
  private async readBlocks(chain: string, numbers: readonly number[], concurrency: number): Promise<DepositRead> {
    const blocks = await mapLimited(numbers, concurrency, (n) =>
      this.client.getBlock({ blockNumber: BigInt(n), includeTransactions: true }),
    );
    const headers = blocks.map(blockHeader);
    const candidates = blocks.flatMap((block, i) => topLevelTransfers(block, headers[i]));
    // Read after the blocks: a reorg in between shows as a log or trace of another block hash, which the round drops and a rewind re-reads.
    candidates.push(...(await this.internalTransfers(blocks, headers, concurrency)));
    if (numbers.length > 0) candidates.push(...(await this.tokenTransfers(chain, headers)));
    const nonzero = candidates.filter((c) => c.amount !== '0');
    const owners =
      nonzero.length > 0
        ? await this.addresses.lookup(
            chain,
            nonzero.map((c) => c.to),
          )
        : new Map<string, DepositAddressOwner>();
    // A transfer a deposit address or a gas account pays is the service's own (a refund, a cancel,
    // a gas top-up), never a deposit nor money owed: its payers are looked up once, among the
    // transfers that pay a deposit address.
    const payers = nonzero.filter((c) => owners.has(c.to.toLowerCase()) && c.from !== undefined).map((c) => c.from!);
    const service = payers.length > 0 ? await this.addresses.servicePayers(chain, payers) : new Set<string>();
    const byService = (c: Candidate) => c.from !== undefined && service.has(c.from.toLowerCase());
    return {
      headers,
      transfers: dustBatches(
        nonzero.filter((c) => !byService(c)),
        owners,
      ),
      serviceTransfers: nonzero
        .filter((c) => byService(c) && owners.has(c.to.toLowerCase()))
        .map((c) => ({ ...c, workflowId: owners.get(c.to.toLowerCase())!.workflowId })),
    };
  }

  private noTraces(): void {
    this.tracesOffered = false;
    this.onNoTraces?.();
  }

  /** Native value the blocks' internal calls move (`debug_traceBlockByHash`, callTracer); none where the node has no traces. */
  private async internalTransfers(
    blocks: ReadonlyArray<{ transactions: ReadonlyArray<{ hash: `0x${string}` }> }>,
    headers: readonly BlockHeader[],
    concurrency: number,
  ): Promise<Candidate[]> {
    if (this.tracesOffered === false) return [];
    const withTxs = headers.filter((_, i) => blocks[i].transactions.length > 0);
    let traces: Array<Array<{ txHash?: string; result?: CallFrame }>>;
    try {
      traces = await mapLimited(
        withTxs,
        concurrency,
        (h) =>
          this.client.request({ method: 'debug_traceBlockByHash', params: [h.hash, { tracer: 'callTracer' }] } as never) as Promise<
            Array<{ txHash?: string; result?: CallFrame }>
          >,
      );
    } catch (err) {
      if (!isMissingMethod(err)) throw err;
      this.noTraces();
      return [];
    }
    if (withTxs.length > 0) this.tracesOffered = true;
    const out: Candidate[] = [];
    for (const [i, h] of withTxs.entries()) {
      const txs = blocks[headers.indexOf(h)].transactions;
      for (const [j, trace] of traces[i].entries()) {
        const txHash = (trace.txHash ?? txs[j]?.hash)?.toLowerCase();
        if (txHash === undefined || trace.result === undefined) continue;
        for (const [k, call] of internalValueTransfers(trace.result).entries())
          out.push({
            blockNumber: h.number,
            blockHash: h.hash,
            txHash,
            transferIndex: k + 1,
            asset: 'native',
            to: call.to,
            amount: call.value,
            from: call.from,
          });
      }
    }
    return out;
  }

  /**
   * The allowed tokens' Transfer logs over the headers' range to deposit addresses: `eth_getLogs`
   * filtered by token and by recipient topic (an OR-list, a request per 1000 addresses; beyond
   * 10 000 addresses by token only, the recipients joined with the table afterwards). Each log's
   * transferIndex is its place among its receipt's logs (stable when the transaction is mined
   * again elsewhere), read from the receipts of the blocks that hold such logs.
   */
  private async tokenTransfers(chain: string, headers: readonly BlockHeader[]): Promise<Candidate[]> {
    if (this.tokens.length === 0) return [];
    const count = await this.addresses.count(chain);
    if (this.known?.count !== count) this.known = { count, topics: (await this.addresses.all(chain)).map(addressTopic) };
    const topics = this.known.topics;
    if (topics.length === 0) return [];
    const chunks: Array<string[] | null> = [];
    if (topics.length > MAX_TOPIC_ADDRESSES) chunks.push(null);
    else for (let i = 0; i < topics.length; i += TOPICS_PER_REQUEST) chunks.push(topics.slice(i, i + TOPICS_PER_REQUEST));
    const answers = await mapLimited(chunks, 4, (to) =>
      this.logsOf(headers[0].number, headers[headers.length - 1].number, { address: [...this.tokens], topics: [TRANSFER_TOPIC, null, to] }),
    );
    const hashes = new Map(headers.map((h) => [h.number, h.hash]));
    const logs = answers.flat().filter((l) => !l.removed && hashes.get(Number(l.blockNumber)) === l.blockHash.toLowerCase());
    if (logs.length === 0) return [];
    const firstLogIndex = await this.firstLogIndexes(logs);
    const out: Candidate[] = [];
    for (const l of logs) {
      const transfer = tokenTransfer(l);
      if (!transfer) continue;
      const txHash = l.transactionHash.toLowerCase();
      out.push({
        blockNumber: Number(l.blockNumber),
        blockHash: l.blockHash.toLowerCase(),
        txHash,
        transferIndex: Number(l.logIndex) - firstLogIndex.get(txHash)!,
        asset: `erc20:${transfer.token}`,
        to: transfer.to,
        amount: transfer.amount,
        from: transfer.from,
      });
    }
    return out;
  }

  /**
   * `eth_getLogs` over blocks `from`..`to`; a node that refuses the range or caps its answer (many
   * providers stop at 10,000 logs or a block span) is asked again for each half, down to one block.
   */
  private async logsOf(
    from: number,
    to: number,
    filter: { address: string[]; topics: Array<string | string[] | null> },
  ): Promise<RpcLog[]> {
    try {
      return (await this.client.request({
        method: 'eth_getLogs',
        params: [{ fromBlock: toHex(from), toBlock: toHex(to), ...filter }],
      } as never)) as RpcLog[];
    } catch (err) {
      if (from >= to || !isResultCap(err)) throw err;
      const middle = Math.floor((from + to) / 2);
      return [...(await this.logsOf(from, middle, filter)), ...(await this.logsOf(middle + 1, to, filter))];
    }
  }

  /**
   * The log index of each transaction's first log, for the transactions of `logs`: from one
   * `eth_getBlockReceipts` per block (a flood of logs in a block is one request, not one per log),
   * or a receipt per transaction from a node without that method.
   */
  private async firstLogIndexes(logs: readonly RpcLog[]): Promise<Map<string, number>> {
    const wanted = new Set(logs.map((l) => l.transactionHash.toLowerCase()));
    const first = new Map<string, number>();
    if (this.blockReceipts !== false) {
      try {
        const blocks = [...new Set(logs.map((l) => l.blockHash.toLowerCase()))];
        const receipts = await mapLimited(
          blocks,
          4,
          (hash) => this.client.request({ method: 'eth_getBlockReceipts', params: [hash] } as never) as Promise<RpcReceipt[] | null>,
        );
        for (const receipt of receipts.flat()) {
          const hash = receipt?.transactionHash.toLowerCase();
          if (hash !== undefined && wanted.has(hash)) first.set(hash, Number(receipt!.logs[0]?.logIndex ?? 0));
        }
        this.blockReceipts = true;
        if ([...wanted].every((h) => first.has(h))) return first;
      } catch (err) {
        if (!isMissingMethod(err)) throw err;
        this.blockReceipts = false;
      }
    }
    const missing = [...wanted].filter((h) => !first.has(h));
    const receipts = await mapLimited(missing, 20, (hash) => this.client.getTransactionReceipt({ hash: hash as `0x${string}` }));
    for (const [i, hash] of missing.entries()) first.set(hash, receipts[i].logs[0]?.logIndex ?? 0);
    return first;
  }
}

/**
 * Whether a JSON-RPC failure is a node refusing a log query for its size (too many results, too
 * wide a block range), which a narrower range answers.
 */
export function isResultCap(err: unknown): boolean {
  for (let e: unknown = err; e instanceof Error; e = (e as { cause?: unknown }).cause) {
    const code = (e as { code?: unknown }).code;
    if (code === -32005) return true;
    if (
      /(more than|exceed|too many|too large|limit|range).*(results|logs|blocks|block range|response size)|query returned more than/i.test(
        e.message,
      )
    )
      return true;
  }
  return false;
}

/** A receipt as `eth_getBlockReceipts` answers it. */
interface RpcReceipt {
  transactionHash: string;
  logs: Array<{ logIndex: string }>;
}

/** Why a dust batch is owed: below the minimum in the address's asset, else another asset. */
function batchReason(record: ExecutionRecord | undefined, deposit: { asset?: string }): 'below-minimum' | 'wrong-asset' {
  const wanted = record?.depositTarget?.asset ?? 'native';
  return (deposit.asset ?? 'native').toLowerCase() === wanted.toLowerCase() ? 'below-minimum' : 'wrong-asset';
}

/** A log as `eth_getLogs` answers it (hex numbers). */
interface RpcLog {
  address: string;
  topics: string[];
  data: string;
  blockNumber: string;
  blockHash: string;
  transactionHash: string;
  logIndex: string;
  removed?: boolean;
}

const toHex = (n: number) => `0x${n.toString(16)}`;

/** Runs `fn` over `items` with at most `limit` at once, answers in order. */
async function mapLimited<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const run = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, run));
  return out;
}

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
  const rpc = () => (client ??= chainClient(chainDeps().rpcUrl));
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

    async readChainRound({ chain, from, waitAfter, checkpoint }): Promise<ChainRound> {
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
      const { headers, transfers, serviceTransfers } = await reader(chain).read(chain, numbers, 20, {
        transfers: MAX_TRANSFERS_PER_ROUND,
        deadline: Date.now() + ROUND_READ_BUDGET_MS,
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
      d.onChainEvent?.({ kind: 'round', chain, head, to: last, transfers: transfers.length });
      return {
        head,
        blocks: headers,
        transfers,
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
      const send: DepositSignal[] = [];
      const owed: UndeliveredDeposit[] = [];
      let dust = 0;
      for (const signal of signals) {
        // A dust batch can never be a deposit, however much it sums to: owed back as one row.
        if (signal.transfers !== undefined) {
          owed.push({
            signal,
            reason: `${signal.transfers} transfers in one block the address cannot take (a dust batch)`,
            tooSmall: true,
          });
          continue;
        }
        const record = records.get(signal.workflowId);
        // What the read model shows never stops being true (a held deposit, a final status), so a
        // record that lags can only send a signal the execution then refuses itself.
        const { outcome } = record ? applyDeposit(record, signal.deposit, at) : { outcome: 'applied' as const };
        if (outcome === 'refused-other-tx' || outcome === 'refused-expired' || outcome === 'refused-cancelled')
          owed.push({ signal, reason: `the execution cannot take it (${outcome})` });
        else if (
          // Neither can ever complete the deposit: both count against the address's share.
          (outcome === 'refused-below-minimum' || outcome === 'refused-wrong-asset') &&
          !(await addresses.takeDustSignal(signal.deposit.chain, signal.to, DUST_TRANSFERS_PER_ADDRESS))
        ) {
          dust++;
          Context.current().log.warn(
            'transfer below minAmount (or of another asset) owed back without a signal: its address had its share of them signalled',
            {
              workflowId: signal.workflowId,
              txHash: signal.deposit.txHash,
              amount: signal.deposit.amount,
            },
          );
          owed.push({ signal, reason: `${outcome.slice('refused-'.length)}, past the address share of signalled ones`, tooSmall: true });
          // The execution's own transfer, mined again after a reorganisation: it hears it (to clear its mark).
        } else if (outcome !== 'duplicate' || (record !== undefined && !holds(record, signal.deposit))) send.push(signal);
      }
      if (dust > 0) deps?.onChainEvent?.({ kind: 'dust', chain: signals[0].deposit.chain, owed: dust });
      return { send, owed };
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
        // Judged on the final record by the execution's own rule: its own deposit again is no refund.
        const reason =
          u.signal.transfers !== undefined
            ? batchReason(record, deposit)
            : record
              ? closedDepositRefusal(record, deposit, at.toISOString())
              : 'closed';
        if (reason === undefined) continue;
        const [, wallet = '', executionId = ''] = /^exec:([^:]*):(.*)$/.exec(workflowId) ?? [];
        // Past its address's share, a transfer it can never take is dust: never paid back without a person.
        const dust = u.signal.transfers !== undefined || u.tooSmall === true;
        const id = await refunds.recordDue({
          workflowId,
          wallet: record?.wallet ?? wallet,
          executionId: record?.executionId ?? executionId,
          ...deposit,
          ...(sender === undefined ? {} : { sender }),
          ...(payerKind === undefined ? {} : { payerKind }),
          asset: deposit.asset,
          reason,
          reportedBy: 'chain-watcher',
          ...(u.signal.transfers === undefined ? {} : { transfers: u.signal.transfers }),
          ...(dust ? { holdReason: 'too-small' as const } : {}),
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
