import { ApplicationFailure, Context } from '@temporalio/activity';
import { createPublicClient, http, type PublicClient } from 'viem';
import type { ChainActivities, ChainRound } from '../contracts/activities';
import type { DepositAddressStore } from '../db/deposit-addresses';
import type { ExecutionStore } from '../db/execution-store';
import type { RefundLedger } from '../db/refund-ledger';
import { applyDeposit, closedDepositRefusal } from '../domain/execution-state';
import { isMissingMethod, offersTraces, proveOnChain, senderOf } from '../lib/chain-transaction';
import { addressTopic, internalValueTransfers, tokenTransfer, TRANSFER_TOPIC, type CallFrame } from '../domain/transfers';
import type { BlockHeader, ChainTransfer, DepositSignal, ReorgReport } from '../domain/chain-watcher';
import type { UndeliveredDeposit } from '../contracts/activities';

/** What the chain activities are told, for the worker's metrics and logs (activities/ keeps no metrics). */
export type ChainEvent =
  | { kind: 'round'; chain: string; head: number; to?: number; transfers: number }
  | { kind: 'dust'; chain: string; owed: number }
  | { kind: 'signals'; chain: string; delivered: number; undelivered: UndeliveredDeposit[] }
  | { kind: 'reorgs'; reports: ReorgReport[] }
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
 * The sender of a transfer on the chain behind `rpcUrl`, for a refunds ledger row (where a refund
 * goes back to): undefined for a row of another chain, or a hash the node does not know.
 */
export function senderLookup(rpcUrl: string): (chain: string, txHash: string) => Promise<string | undefined> {
  let client: PublicClient | undefined;
  let chainId: Promise<number> | undefined;
  return async (chain, txHash) => {
    client ??= chainClient(rpcUrl);
    chainId ??= client.getChainId().catch((err: unknown) => {
      chainId = undefined;
      throw err;
    });
    if (chain !== `evm:${await chainId}`) return undefined;
    return senderOf(client, txHash);
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
/** How often a waiting readChainRound asks the node for its head. */
const HEAD_POLL_MS = 100;

/** A block's header as the watcher keeps it; throws for a pending block (no number or hash yet). */
function blockHeader(b: { number: bigint | null; hash: `0x${string}` | null; parentHash: `0x${string}` }): BlockHeader {
  if (b.number === null || b.hash === null) throw new Error('the node answered a pending block');
  return { number: Number(b.number), hash: b.hash.toLowerCase(), parentHash: b.parentHash.toLowerCase() };
}

/** The top-level native transfers of a block's transactions (transferIndex 0), each with its recipient in lowercase. */
function topLevelTransfers(
  block: { transactions: ReadonlyArray<{ to: `0x${string}` | null; value: bigint; hash: `0x${string}` }> },
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
    }));
}

type Candidate = Omit<ChainTransfer, 'workflowId'>;

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
   * Blocks `numbers` (`concurrency` reads at once) as headers, and the transfers in them that pay
   * one of `chain`'s deposit addresses, each with its execution: top-level native transfers,
   * native value moved by internal calls (call traces), and Transfer logs of the allowed tokens.
   */
  async read(
    chain: string,
    numbers: readonly number[],
    concurrency: number,
  ): Promise<{ headers: BlockHeader[]; transfers: ChainTransfer[] }> {
    // Asked before any block needs it, so that a node without traces is told at the watcher's first round.
    if (this.tracesOffered === undefined) {
      const offered = await offersTraces(this.client);
      if (offered === false) this.noTraces();
      else this.tracesOffered = offered;
    }
    const blocks = await mapLimited(numbers, concurrency, (n) =>
      this.client.getBlock({ blockNumber: BigInt(n), includeTransactions: true }),
    );
    const headers = blocks.map(blockHeader);
    const candidates = blocks.flatMap((block, i) => topLevelTransfers(block, headers[i]));
    // Read after the blocks: a reorg in between shows as a log or trace of another block hash, which the round drops and a rewind re-reads.
    candidates.push(...(await this.internalTransfers(blocks, headers, concurrency)));
    if (numbers.length > 0) candidates.push(...(await this.tokenTransfers(chain, headers)));
    const owners =
      candidates.length > 0
        ? await this.addresses.lookup(
            chain,
            candidates.map((c) => c.to),
          )
        : new Map<string, { workflowId: string; minAmount: string }>();
    const transfers: ChainTransfer[] = [];
    for (const c of candidates) {
      const owner = owners.get(c.to);
      if (owner) transfers.push({ ...c, workflowId: owner.workflowId });
    }
    return { headers, transfers };
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
   * again elsewhere), read from the receipts of the few transactions that pay a deposit address.
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
    const range = { fromBlock: toHex(headers[0].number), toBlock: toHex(headers[headers.length - 1].number) };
    const answers = await mapLimited(
      chunks,
      4,
      (to) =>
        this.client.request({
          method: 'eth_getLogs',
          params: [{ ...range, address: [...this.tokens], topics: [TRANSFER_TOPIC, null, to] }],
        } as never) as Promise<RpcLog[]>,
    );
    const hashes = new Map(headers.map((h) => [h.number, h.hash]));
    const logs = answers.flat().filter((l) => !l.removed && hashes.get(Number(l.blockNumber)) === l.blockHash.toLowerCase());
    if (logs.length === 0) return [];
    const txHashes = [...new Set(logs.map((l) => l.transactionHash.toLowerCase()))];
    const receipts = await mapLimited(txHashes, 20, (hash) => this.client.getTransactionReceipt({ hash: hash as `0x${string}` }));
    const firstLogIndex = new Map(txHashes.map((hash, i) => [hash, receipts[i].logs[0]?.logIndex ?? 0]));
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
      });
    }
    return out;
  }
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
    async chainHead() {
      const block = await rpc().getBlock({ blockTag: 'latest' });
      const h = blockHeader(block);
      return { number: h.number, hash: h.hash };
    },

    async readChainRound({ chain, from, waitAfter }): Promise<ChainRound> {
      const d = chainDeps();
      // A watcher started elsewhere waits (retried) rather than signal with a guessed depth.
      const confirmations = d.confirmations(chain);
      if (confirmations === undefined) throw new Error(`this worker has no DEPOSIT_CONFIRMATIONS for ${chain}`);
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
      const { headers, transfers } = await reader(chain).read(chain, numbers, 20);
      d.onChainEvent?.({ kind: 'round', chain, head, to: numbers.length > 0 ? to : undefined, transfers: transfers.length });
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
      const head = Number(await rpc().getBlockNumber({ cacheTime: 0 }));
      const wanted = numbers.filter((n) => n <= head);
      const blocks = await mapLimited(wanted, 20, (n) => rpc().getBlock({ blockNumber: BigInt(n) }));
      return blocks.map((b) => {
        const h = blockHeader(b);
        return { number: h.number, hash: h.hash };
      });
    },

    async reportReorgs({ reports }) {
      for (const r of reports) {
        Context.current().log.error('deposit reorganised away after it was signalled: its block is no longer canonical', { ...r });
      }
      deps?.onChainEvent?.({ kind: 'reorgs', reports });
    },

    async sortDeposits({ signals }) {
      const { executions, addresses } = chainDeps();
      const records = await executions.getMany([...new Set(signals.map((s) => s.workflowId))]);
      const at = new Date().toISOString();
      const send: DepositSignal[] = [];
      const owed: UndeliveredDeposit[] = [];
      let dust = 0;
      for (const signal of signals) {
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
          owed.push({ signal, reason: `${outcome.slice('refused-'.length)}, past the address share of signalled ones` });
        } else if (outcome !== 'duplicate') send.push(signal);
      }
      if (dust > 0) deps?.onChainEvent?.({ kind: 'dust', chain: signals[0].deposit.chain, owed: dust });
      return { send, owed };
    },

    async proveDeposit({ target, deposit }) {
      const proof = await proveOnChain(rpc(), target, deposit, chainDeps().confirmations(target.chain), chainDeps().tokens);
      if (!proof.ok && proof.retryable) throw ApplicationFailure.retryable(proof.message, 'DepositNotYetProven');
      return proof;
    },

    async reportSignals({ chain, delivered, undelivered }) {
      const { executions, refunds } = chainDeps();
      const records = undelivered.length > 0 ? await executions.getMany(undelivered.map((u) => u.signal.workflowId)) : new Map();
      // Where a refund would go back to: the transfers' senders, in one batched request.
      const senders = await Promise.all(undelivered.map((u) => senderOf(rpc(), u.signal.deposit.txHash)));
      for (const [i, u] of undelivered.entries()) {
        const { workflowId, deposit } = u.signal;
        const sender = senders[i];
        const record = records.get(workflowId);
        // Judged on the final record by the execution's own rule: its own deposit again is no refund.
        const reason = record ? closedDepositRefusal(record, deposit, new Date().toISOString()) : 'closed';
        if (reason === undefined) continue;
        const [, wallet = '', executionId = ''] = /^exec:([^:]*):(.*)$/.exec(workflowId) ?? [];
        const id = await refunds.recordDue({
          workflowId,
          wallet: record?.wallet ?? wallet,
          executionId: record?.executionId ?? executionId,
          ...deposit,
          ...(sender === undefined ? {} : { sender }),
          asset: deposit.asset,
          reason,
          reportedBy: 'chain-watcher',
        });
        Context.current().log.warn('deposit its execution cannot take (closed, or its record refuses it): recorded in the refunds ledger', {
          workflowId,
          ...deposit,
          refundId: id,
          reason: u.reason,
        });
      }
      deps?.onChainEvent?.({ kind: 'signals', chain, delivered, undelivered });
    },
  };
}
