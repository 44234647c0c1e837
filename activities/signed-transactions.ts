import { Context } from '@temporalio/activity';
import { keccak256, TransactionReceiptNotFoundError, type Hex, type PublicClient, type TransactionReceipt } from 'viem';
import type { RefundVariant } from '../contracts/refunds';
import type { TopUpVariant } from '../db/gas-account';
import { evmChainId } from '../domain/deposit-key';
import { feeFields, feesOf, firstFees, maxCost, type RefundFees } from '../domain/refund-fees';
import type { UnsignedTx } from '../domain/sign-request';

// The refunder's transactions on the wire, refund variants and gas top-ups alike: signed as the
// read model records them, sent to the node, looked for in receipts, at the fees the chain asks now.

/** The errors of eth_sendRawTransaction that say the node has the transaction, or its nonce is used: nothing to send again. */
const ALREADY_SENT = /already known|already imported|known transaction|nonce too low|replacement transaction underpriced|underpriced/i;

/**
 * Signs one transaction of `chain` at `fees` with `sign` and answers it as the ledger records it
 * (hash, raw, lowercase `to`, decimal amounts, fee fields): a refund's variant or a gas top-up.
 */
export async function signRecorded(
  chain: string,
  fields: { nonce: number; to: string; value: bigint; gas: bigint; data?: Hex },
  fees: RefundFees,
  sign: (tx: UnsignedTx) => Promise<Hex>,
): Promise<Omit<RefundVariant, 'kind'>> {
  const { nonce, to, value, gas, data } = fields;
  const tx: UnsignedTx = {
    chainId: evmChainId(chain)!,
    nonce,
    to,
    value: value.toString(),
    gas: gas.toString(),
    ...(data === undefined ? {} : { data }),
    ...feeFields(fees),
  };
  const raw = await sign(tx);
  return {
    hash: keccak256(raw),
    raw,
    to: to.toLowerCase(),
    ...(data === undefined ? {} : { data }),
    value: value.toString(),
    gas: gas.toString(),
    ...feeFields(fees),
    signedAt: new Date().toISOString(),
  };
}

/**
 * The refund activities (contracts/activities.ts RefundActivities) over the worker's chain node and

/** The chain's fees now, from eth_feeHistory (legacy: eth_gasPrice). */
export async function marketFees(client: PublicClient): Promise<RefundFees> {
  const [history, gasPrice] = await Promise.all([
    client.getFeeHistory({ blockCount: 5, rewardPercentiles: [50], blockTag: 'latest' }),
    client.getGasPrice(),
  ]);
  return firstFees(history, gasPrice);
}

/** The receipt of `hash`, or undefined while the node has none. */
export const receiptOf = (client: PublicClient, hash: string): Promise<TransactionReceipt | undefined> =>
  client.getTransactionReceipt({ hash: hash as Hex }).catch((err: unknown) => {
    if (err instanceof TransactionReceiptNotFoundError) return undefined;
    throw err;
  });

/**
 * Sends each signed transaction to the node; answers the hashes it took or says it has (a
 * variant counts as sent once the node has it: its wait for a replacement starts). `id` names
 * the ledger row or top-up in the log of a transaction the node refused.
 */
export async function sendAll(client: PublicClient, variants: readonly TopUpVariant[], id: string): Promise<Set<string>> {
  const sent = new Set<string>();
  for (const v of variants) {
    try {
      await client.request({ method: 'eth_sendRawTransaction', params: [v.raw as Hex] });
      sent.add(v.hash);
    } catch (err) {
      const message = (err as Error).message;
      if (/HttpRequestError|TimeoutError/.test((err as Error).name)) throw err;
      if (ALREADY_SENT.test(message)) sent.add(v.hash);
      else Context.current().log.warn('transaction refused by the node', { id, hash: v.hash, error: message.slice(0, 300) });
    }
  }
  return sent;
}

/** `variants` with the head recorded on those first sent now; undefined when none was. */
export const markSent = <V extends TopUpVariant>(variants: readonly V[], sent: ReadonlySet<string>, head: number): V[] | undefined =>
  variants.every((v) => v.sentAtBlock !== undefined || !sent.has(v.hash))
    ? undefined
    : variants.map((v) => (v.sentAtBlock === undefined && sent.has(v.hash) ? { ...v, sentAtBlock: head } : v));

/** The most a signed transaction can cost its sender: value + gas × fee cap. */
export const mostCost = (v: TopUpVariant) => BigInt(v.value) + maxCost(BigInt(v.gas), feesOf(v));

/**
 * Whether `address`'s nonce `nonce`, seen used (its `latest` count above it) while none of the
 * ledger's transactions at it has a receipt, was taken by a transaction the service did not sign.
 * Decided at a second look only, `confirmations` blocks after the first (`seen`, kept by the
 * caller through `remember`): a load-balanced node may answer the count from a fresh backend and
 * the receipts from a lagging one, and by then the lagging one has caught up. The second look
 * reads the count as of the first one's block, so a reorganisation since then that undid the
 * spend starts the wait again.
 */
export async function nonceTakenForSure(
  client: PublicClient,
  look: { address: string; nonce: number; head: number; confirmations: number; seen?: number },
  remember: (head: number) => Promise<void>,
): Promise<boolean> {
  if (look.seen === undefined || look.seen > look.head) {
    await remember(look.head);
    return false;
  }
  if (look.head - look.seen < look.confirmations) return false;
  const then = await client.getTransactionCount({ address: look.address as Hex, blockNumber: BigInt(look.seen) });
  if (then > look.nonce) return true;
  await remember(look.head);
  return false;
}
