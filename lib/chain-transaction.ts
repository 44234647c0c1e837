import { TransactionNotFoundError, TransactionReceiptNotFoundError, type PublicClient } from 'viem';
import {
  TX_HASH,
  payerAt,
  proveDeposit,
  reportedAsset,
  type AllowedToken,
  type ChainTransaction,
  type DepositProof,
} from '../domain/deposit-proof';
import { payerKind, type PayerKind } from '../domain/payer-kind';
import { internalValueTransfers, type CallFrame } from '../domain/transfers';
import type { Deposit, DepositAsset, DepositTarget } from '../domain/execution-state';
import { chainClient } from './chain-client';

/**
 * The call trace of one transaction (`debug_traceTransaction` with the `callTracer`), flattened to
 * the value its internal calls move; undefined when the node offers no traces.
 */
export async function internalTransfersOf(client: PublicClient, txHash: string): Promise<ChainTransaction['internalTransfers']> {
  try {
    const frame = (await client.request({
      method: 'debug_traceTransaction',
      params: [txHash as `0x${string}`, { tracer: 'callTracer' }],
    } as never)) as CallFrame;
    return internalValueTransfers(frame);
  } catch (err) {
    if (isMissingMethod(err)) return undefined;
    throw err;
  }
}

/** Whether a JSON-RPC failure says the node has no such method (or refuses it): not a failure to retry. */
export function isMissingMethod(err: unknown): boolean {
  for (let e: unknown = err; e instanceof Error; e = (e as { cause?: unknown }).cause) {
    const code = (e as { code?: unknown }).code;
    if (code === -32601 || code === -32004) return true;
    if (/method\b.*\b(not found|not supported|not available|does not exist|not whitelisted|not allowed)/i.test(e.message)) return true;
  }
  return false;
}

/**
 * Whether the node answers call traces: asks `debug_traceTransaction` for a hash no transaction
 * has. A node with traces answers that it knows no such transaction; one without, that it has no
 * such method. Undefined when the node cannot be reached.
 */
export async function offersTraces(client: PublicClient): Promise<boolean | undefined> {
  try {
    await client.request({ method: 'debug_traceTransaction', params: [`0x${'0'.repeat(64)}`, { tracer: 'callTracer' }] } as never);
    return true;
  } catch (err) {
    if (isMissingMethod(err)) return false;
    if (err instanceof Error && /HttpRequestError|TimeoutError/.test(err.name)) return undefined;
    return true;
  }
}

/**
 * Reads what the chain holds of one transaction and the chain's head, for domain/deposit-proof:
 * the transaction, its receipt's logs, and with `traces` the value its internal calls move.
 * A hash the node does not know is `tx: undefined`; a node that cannot be reached throws.
 */
export async function readChainTransaction(
  client: PublicClient,
  txHash: string,
  traces = false,
): Promise<{ tx?: ChainTransaction; head: number }> {
  const head = Number(await client.getBlockNumber({ cacheTime: 0 }));
  if (!TX_HASH.test(txHash)) return { head };
  const hash = txHash.toLowerCase() as `0x${string}`;
  try {
    const tx = await client.getTransaction({ hash });
    if (tx.blockNumber === null)
      return {
        head,
        tx: {
          to: tx.to?.toLowerCase() ?? null,
          value: tx.value.toString(),
          blockNumber: null,
          succeeded: false,
          from: tx.from.toLowerCase(),
        },
      };
    const receipt = await client.getTransactionReceipt({ hash });
    const internalTransfers = traces ? await internalTransfersOf(client, hash) : undefined;
    return {
      head,
      tx: {
        to: tx.to?.toLowerCase() ?? null,
        value: tx.value.toString(),
        blockNumber: Number(receipt.blockNumber),
        succeeded: receipt.status === 'success',
        from: tx.from.toLowerCase(),
        logs: receipt.logs.map((l) => ({ address: l.address, topics: l.topics, data: l.data })),
        ...(internalTransfers === undefined ? {} : { internalTransfers }),
      },
    };
  } catch (err) {
    if (err instanceof TransactionNotFoundError || err instanceof TransactionReceiptNotFoundError) return { head };
    throw err;
  }
}

/**
 * Whether the chain backs `reported` to `target`, `confirmations` deep (the API's check of a
 * report, the worker's of a signal), in native value or a token of `tokens` (DEPOSIT_TOKENS): a
 * report of any other token is refused before the node is asked. A chain with no number of confirmations is watched by no
 * worker: nothing on it is believed, and the caller hears why (throws).
 * `servicePayers` answers which of some addresses the service pays from on a chain
 * (DepositAddressStore.servicePayers): the transfer's payer is looked up there, and a transfer one
 * of them paid (the service's own refund, cancel or gas top-up) is refused as `service-transfer`.
 */
export async function proveOnChain(
  client: PublicClient,
  target: DepositTarget,
  reported: Deposit,
  confirmations: number | undefined,
  tokens: readonly AllowedToken[],
  servicePayers?: (chain: string, addresses: readonly string[]) => Promise<ReadonlySet<string>>,
): Promise<DepositProof> {
  if (confirmations === undefined) throw new Error(`no DEPOSIT_CONFIRMATIONS for ${target.chain}`);
  // Refused without reading the chain: the proof of any transaction says the same.
  const refused = proveDeposit(target, reported, undefined, 0, confirmations, tokens);
  if (!refused.ok && (refused.reason === 'wrong-chain' || refused.reason === 'token-not-allowed')) return refused;
  const traces = reportedAsset(target, reported) === 'native' && (reported.transferIndex ?? 0) > 0;
  const { tx, head } = await readChainTransaction(client, reported.txHash, traces);
  const payer = tx === undefined ? undefined : payerAt(tx, reportedAsset(target, reported), reported.transferIndex ?? 0);
  const service = payer === undefined || !servicePayers ? new Set<string>() : await servicePayers(target.chain, [payer]);
  return proveDeposit(target, reported, tx, head, confirmations, tokens, service);
}

/**
 * Who paid the transfer `txHash` holds at `transferIndex` in `asset` (lowercase; domain/deposit-proof
 * `payerAt`): the token `Transfer` log's `from`, an internal call's frame `from` (the call trace), or
 * the transaction's sender for its own value. Undefined when the node knows no such transaction or
 * transfer, or has no traces for an internal call's.
 */
export async function payerOf(
  client: PublicClient,
  txHash: string,
  transferIndex: number,
  asset: DepositAsset,
): Promise<string | undefined> {
  const { tx } = await readChainTransaction(client, txHash, asset === 'native' && transferIndex > 0);
  return tx === undefined ? undefined : payerAt(tx, asset, transferIndex);
}

/** Whether `address` is an EOA or a contract, by its code at the latest block (domain/payer-kind.ts). */
export async function payerKindOf(client: PublicClient, address: string): Promise<PayerKind> {
  return payerKind(await client.getCode({ address: address as `0x${string}` }));
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
