import type { PublicClient } from 'viem';
import { dustBatches, type AddressOwner, type FoundTransfer } from '../domain/dust-batches';
import type { BlockHeader, ChainTransfer } from '../domain/chain-watcher';
import { addressTopic, internalValueTransfers, tokenTransfer, TRANSFER_TOPIC, type CallFrame } from '../domain/transfers';
import { isMissingMethod, offersTraces } from './chain-transaction';
import { mapLimited } from './map-limited';

/**
 * What the reader asks of the read model's deposit addresses (db/deposit-addresses.ts
 * DepositAddressStore answers it): lib/ reads the chain and leaves the table to db/.
 */
export interface DepositAddressIndex {
  /** How many deposit addresses the chain has: the reader re-reads them all when it changes. */
  count(chain: string): Promise<number>;
  /** Every deposit address of the chain (lowercase). */
  all(chain: string): Promise<string[]>;
  /** The owners of those of `addresses` that are deposit addresses, by lowercase address. */
  lookup(chain: string, addresses: readonly string[]): Promise<ReadonlyMap<string, AddressOwner>>;
  /** Those of `addresses` the service pays from (deposit addresses, gas accounts), lowercase. */
  servicePayers(chain: string, addresses: readonly string[]): Promise<ReadonlySet<string>>;
}

/** A block's header as the watcher keeps it; throws for a pending block (no number or hash yet). */
export function blockHeader(b: { number: bigint | null; hash: `0x${string}` | null; parentHash: `0x${string}` }): BlockHeader {
  if (b.number === null || b.hash === null) throw new Error('the node answered a pending block');
  return { number: Number(b.number), hash: b.hash.toLowerCase(), parentHash: b.parentHash.toLowerCase() };
}

/** The top-level native transfers of a block's transactions (transferIndex 0), each with its recipient and payer (tx.from) in lowercase. */
function topLevelTransfers(
  block: { transactions: ReadonlyArray<{ from: `0x${string}`; to: `0x${string}` | null; value: bigint; hash: `0x${string}` }> },
  h: BlockHeader,
): FoundTransfer[] {
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
    private readonly addresses: DepositAddressIndex,
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
        : new Map<string, AddressOwner>();
    // A transfer a deposit address or a gas account pays is the service's own (a refund, a cancel,
    // a gas top-up), never a deposit nor money owed: its payers are looked up once, among the
    // transfers that pay a deposit address.
    const payers = nonzero.filter((c) => owners.has(c.to.toLowerCase()) && c.from !== undefined).map((c) => c.from!);
    const service = payers.length > 0 ? await this.addresses.servicePayers(chain, payers) : new Set<string>();
    const byService = (c: FoundTransfer) => c.from !== undefined && service.has(c.from.toLowerCase());
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
  ): Promise<FoundTransfer[]> {
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
    const out: FoundTransfer[] = [];
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
  private async tokenTransfers(chain: string, headers: readonly BlockHeader[]): Promise<FoundTransfer[]> {
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
    const out: FoundTransfer[] = [];
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
