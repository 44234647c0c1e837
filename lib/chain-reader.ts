import { BlockNotFoundError, type PublicClient } from 'viem';
import { dustBatches, type AddressOwner, type FoundTransfer } from '../domain/dust-batches';
import type { BlockHeader, BlockRef, ChainTransfer } from '../domain/chain-watcher';
import { addBlock, addWholeBlocks, emptyRoundPart, type RoundBounds } from '../domain/round-bounds';
import { addressTopic, internalValueTransfers, tokenTransfer, TRANSFER_TOPIC, type CallFrame } from '../domain/transfers';
import { isMissingMethod, offersTraces } from './chain-transaction';
import { beforeDeadline } from './deadline';
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
  /** Blocks of `headers` with transactions whose call traces did not answer in time: read without them. */
  untraced: BlockRef[];
  /** Blocks of the backlog given whose traces answered: their internal transfers are in `transfers`. */
  traced: BlockRef[];
  /**
   * Blocks of `headers` with more transactions than `limits.traceMaxTransactions`: read without
   * their call traces and never traced by the watcher (npm run reconcile traces them).
   */
  heavy: BlockRef[];
}

/** What a read may take: bounds on its answer, and the times after which it reads no more blocks or waits for no trace. */
export interface ReadLimits extends RoundBounds {
  deadline: number;
  traceDeadline: number;
  /** The most transactions of a block whose call traces are asked: a node re-executes the whole block to trace it. */
  traceMaxTransactions: number;
}

const UNLIMITED: ReadLimits = {
  transfers: Infinity,
  bytes: Infinity,
  deadline: Infinity,
  traceDeadline: Infinity,
  traceMaxTransactions: Infinity,
};

/**
 * Call traces asked at once: a trace re-executes its block, so a node flooded with transactions
 * answers each slowly, and more at once only lengthens the queue every other request waits in.
 */
const TRACE_CONCURRENCY = 1;
/** Late traces kept for a later round (each a block's traces). */
const KEPT_LATE_TRACES = 8;

type BlockTraces = Array<{ txHash?: string; result?: CallFrame }>;

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
  /** Trace requests sent and not yet answered, this round's or an earlier one's the round stopped waiting for. */
  private tracesInFlight = 0;
  /** Traces a round stopped waiting for, by block hash: a later round takes the node's answer instead of asking again. */
  private readonly lateTraces = new Map<string, Promise<BlockTraces>>();

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
   * never take (and those past the first few of a block it could) are summed per block
   * (dustBatches), whole blocks are answered while `limits.transfers` entries and `limits.bytes`
   * bytes hold, and no group of blocks is read after `limits.deadline` (the blocks left are the
   * next round's). Traces are waited for until `limits.traceDeadline`: a block whose trace has not
   * answered by then is read without it and named in `untraced`. Then, if every trace answered,
   * the time left traces blocks of `backlog` (blocks an earlier round left untraced), oldest first;
   * those traced are named in `traced`. A transfer whose payer is one of `chain`'s deposit
   * addresses is the service's own (a refund or a cancel, signed with a key derived from the seed)
   * and never a deposit nor money owed: it is left out of `transfers` and answered apart, one entry
   * each, in `serviceTransfers` (reconcile labels them).
   */
  async read(
    chain: string,
    numbers: readonly number[],
    concurrency: number,
    limits: ReadLimits = UNLIMITED,
    backlog: readonly BlockRef[] = [],
  ): Promise<DepositRead> {
    // Asked before any block needs it, so that a node without traces is told at the watcher's first round.
    if (this.tracesOffered === undefined) {
      const offered = await offersTraces(this.client);
      if (offered === false) this.noTraces();
      else this.tracesOffered = offered;
    }
    const answer = emptyRoundPart();
    const untraced: BlockRef[] = [];
    const heavy: BlockRef[] = [];
    for (let i = 0; i < numbers.length; i += concurrency) {
      const part = await this.readBlocks(chain, numbers.slice(i, i + concurrency), concurrency, limits);
      const whole = addWholeBlocks(answer, part, limits);
      const taken = new Set(answer.headers.map((h) => h.hash));
      untraced.push(...part.untraced.filter((b) => taken.has(b.hash)));
      heavy.push(...part.heavy.filter((b) => taken.has(b.hash)));
      if (!whole || answer.transfers.length >= limits.transfers || Date.now() >= limits.deadline) break;
    }
    const traced: BlockRef[] = [];
    // A node that let a trace go unanswered is not given older blocks to trace on top of it.
    if (untraced.length === 0 && this.tracesOffered === true)
      for (const block of backlog) {
        if (Date.now() >= limits.traceDeadline) break;
        const found = await this.tracedLater(chain, block, limits);
        if (found === undefined) break;
        if (!addBlock(answer, { ...block, parentHash: '' }, found, limits, false)) break;
        traced.push(block);
      }
    const { headers, transfers, serviceTransfers } = answer;
    return { headers, transfers, serviceTransfers, untraced, traced, heavy };
  }

  /** readBlocks() for one block of the backlog: only the value its internal calls moved; undefined when its trace did not answer in time. */
  private async tracedLater(
    chain: string,
    block: BlockRef,
    limits: ReadLimits,
  ): Promise<{ transfers: ChainTransfer[]; serviceTransfers: ChainTransfer[] } | undefined> {
    const header = { number: block.number, hash: block.hash, parentHash: '' };
    const full = await this.client.getBlock({ blockHash: block.hash as `0x${string}` }).catch((err: unknown) => {
      // Reorganised away: nothing of it is wanted (the watcher's window no longer holds it).
      if (err instanceof BlockNotFoundError) return undefined;
      throw err;
    });
    if (full === undefined) return { transfers: [], serviceTransfers: [] };
    const traced = await this.internalTransfers([{ transactions: full.transactions.map((hash) => ({ hash })) }], [header], limits);
    if (traced.untraced.length > 0 || traced.heavy.length > 0) return undefined;
    return this.join(chain, traced.found);
  }

  /** read() for one group of blocks. */
  private async readBlocks(
    chain: string,
    numbers: readonly number[],
    concurrency: number,
    limits: ReadLimits,
  ): Promise<Omit<DepositRead, 'traced'>> {
    const blocks = await mapLimited(numbers, concurrency, (n) =>
      this.client.getBlock({ blockNumber: BigInt(n), includeTransactions: true }),
    );
    const headers = blocks.map(blockHeader);
    const candidates = blocks.flatMap((block, i) => topLevelTransfers(block, headers[i]));
    // Read after the blocks: a reorg in between shows as a log or trace of another block hash, which the round drops and a rewind re-reads.
    const internal = await this.internalTransfers(blocks, headers, limits);
    candidates.push(...internal.found);
    if (numbers.length > 0) candidates.push(...(await this.tokenTransfers(chain, headers)));
    return { headers, ...(await this.join(chain, candidates)), untraced: internal.untraced, heavy: internal.heavy };
  }

  /** Joins transfers found with the deposit addresses they pay; the service's own apart. */
  private async join(
    chain: string,
    candidates: readonly FoundTransfer[],
  ): Promise<{ transfers: ChainTransfer[]; serviceTransfers: ChainTransfer[] }> {
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

  /**
   * Native value the blocks' internal calls move (`debug_traceBlockByHash`, callTracer), a few
   * blocks at once; none where the node has no traces. A trace not answered by `traceDeadline` is
   * not waited for (nor asked again: the node may still be working on it), and no further one is
   * asked: those blocks are answered in `untraced`. A block of more than
   * `limits.traceMaxTransactions` transactions is not traced at all (`heavy`): the node
   * re-executes a block to trace it and answers nothing else meanwhile, so one trace of a flooded
   * block (tens of seconds for a few hundred token transfers) would stall every reader of the node.
   */
  private async internalTransfers(
    blocks: ReadonlyArray<{ transactions: ReadonlyArray<{ hash: `0x${string}` }> }>,
    headers: readonly BlockHeader[],
    { traceDeadline, traceMaxTransactions }: ReadLimits,
  ): Promise<{ found: FoundTransfer[]; untraced: BlockRef[]; heavy: BlockRef[] }> {
    if (this.tracesOffered === false) return { found: [], untraced: [], heavy: [] };
    const heavy = headers
      .filter((_, i) => blocks[i].transactions.length > traceMaxTransactions)
      .map((h) => ({ number: h.number, hash: h.hash }));
    const withTxs = headers.filter((_, i) => blocks[i].transactions.length > 0 && blocks[i].transactions.length <= traceMaxTransactions);
    // A trace an earlier round stopped waiting for may still hold the node: none is added to it.
    let late = this.tracesInFlight > 0;
    let traces: Array<BlockTraces | undefined>;
    try {
      traces = await mapLimited(withTxs, TRACE_CONCURRENCY, async (h) => {
        let request = this.lateTraces.get(h.hash);
        if (request === undefined) {
          if (late || Date.now() >= traceDeadline) return undefined;
          request = this.traceBlock(h.hash);
        }
        const answer = await beforeDeadline(request, traceDeadline);
        if (answer === undefined) late = true;
        else this.lateTraces.delete(h.hash);
        return answer;
      });
    } catch (err) {
      if (!isMissingMethod(err)) throw err;
      this.noTraces();
      return { found: [], untraced: [], heavy: [] };
    }
    if (traces.some((t) => t !== undefined)) this.tracesOffered = true;
    const out: FoundTransfer[] = [];
    const untraced: BlockRef[] = [];
    for (const [i, h] of withTxs.entries()) {
      const blockTraces = traces[i];
      if (blockTraces === undefined) {
        untraced.push({ number: h.number, hash: h.hash });
        continue;
      }
      const txs = blocks[headers.indexOf(h)].transactions;
      for (const [j, trace] of blockTraces.entries()) {
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
    return { found: out, untraced, heavy };
  }

  /** Asks the node for a block's traces, kept by hash until a round takes the answer (or it fails). */
  private traceBlock(hash: string): Promise<BlockTraces> {
    this.tracesInFlight++;
    const request = (
      this.client.request({ method: 'debug_traceBlockByHash', params: [hash, { tracer: 'callTracer' }] } as never) as Promise<BlockTraces>
    ).finally(() => this.tracesInFlight--);
    this.lateTraces.set(hash, request);
    request.catch(() => this.lateTraces.delete(hash));
    for (const oldest of this.lateTraces.keys()) {
      if (this.lateTraces.size <= KEPT_LATE_TRACES) break;
      this.lateTraces.delete(oldest);
    }
    return request;
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
