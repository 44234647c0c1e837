import { Context } from '@temporalio/activity';
import { keccak256, TransactionReceiptNotFoundError, type Hex, type PublicClient, type TransactionSerializable } from 'viem';
import type { RefundActivities, RefundAddress, RefundStep } from '../contracts/activities';
import type { HoldReason, RefundVariant } from '../contracts/refunds';
import type { RefundJob, RefundPayments } from '../db/refund-payments';
import { proveDeposit } from '../domain/deposit-proof';
import { evmChainId } from '../domain/deposit-key';
import { payerKind } from '../domain/payer-kind';
import {
  feeFields,
  feesOf,
  firstFees,
  gasLimit,
  maxCost,
  refundValue,
  replacementFees,
  tooSmall,
  withinFeeCap,
  type RefundFees,
} from '../domain/refund-fees';
import { holdBeforeSigning, refundDestination, type NativeLimit } from '../domain/refund-policy';
import { readChainTransaction } from '../lib/chain-transaction';
import type { RefundSigner } from '../lib/refund-signer';
import { chainClient } from './chain';

/** What the refunder tells the worker, for its metrics (activities/ keeps none). */
export type RefundEvent =
  | { kind: 'signed'; chain: string }
  | { kind: 'replaced'; chain: string; variant: 'refund' | 'cancel' }
  | { kind: 'held'; chain: string; reason: HoldReason; rows: number }
  | { kind: 'paid'; chain: string; whileVoid: boolean }
  /** A refund's nonce was mined another way than a variant of the ledger, or the address's nonce is not the ledger's count: automatic refunds from it stop. */
  | { kind: 'nonce-mismatch'; chain: string; address: string };

export interface RefundDeps {
  rpcUrl: string;
  payments: RefundPayments;
  signer: RefundSigner;
  /** REFUND_PAYMENTS: false, no new refund is signed. */
  enabled: boolean;
  /** The chain's DEPOSIT_CONFIRMATIONS: a refund is recorded mined this deep. */
  confirmations: (chain: string) => number | undefined;
  /** CHAIN_REORG_WINDOW: a transfer this deep (or finalized) is paid back. */
  windowSize: number;
  nativeLimit: NativeLimit;
  minFeeMultiple: number;
  replaceAfterBlocks: number;
  /** How long a refund workflow waits between looks at the chain (CHAIN_POLL_INTERVAL_MS). */
  pollIntervalMs: number;
  onRefundEvent?: (event: RefundEvent) => void;
}

/** Deposit addresses one sweep hands to refund workflows, at most. */
export const ADDRESSES_PER_SWEEP = 100;

/** The errors of eth_sendRawTransaction that say the node has the transaction, or its nonce is used: nothing to send again. */
const ALREADY_SENT = /already known|already imported|known transaction|nonce too low|replacement transaction underpriced|underpriced/i;

/**
 * The refund activities (contracts/activities.ts RefundActivities) over the worker's chain node and
 * the read model; without `deps` (no CHAIN_RPC_URL) every call throws.
 */
export function createRefundActivities(deps: RefundDeps | undefined): RefundActivities {
  let client: PublicClient | undefined;
  const need = (): RefundDeps => {
    if (!deps) throw new Error('this worker has no CHAIN_RPC_URL: it pays no refunds');
    return deps;
  };
  const rpc = () => (client ??= chainClient(need().rpcUrl));
  const log = () => Context.current().log;

  /** Throws when the node serves another chain than `chain`: nothing is signed or sent for the wrong one. */
  const checkChain = async (chain: string) => {
    const id = await rpc().getChainId();
    if (evmChainId(chain) !== id) throw new Error(`the node of CHAIN_RPC_URL serves evm:${id}, not ${chain}`);
  };

  /** The job of `input`'s row when it is still the address's next one. */
  const jobOf = async (input: RefundStep): Promise<RefundJob | undefined> => {
    const job = await need().payments.next(input.chain, input.address);
    return job?.row.id === input.id ? job : undefined;
  };

  const held = async (job: RefundJob, reason: HoldReason): Promise<'held' | 'gone'> => {
    if (!(await need().payments.hold(job.row.id, reason))) return 'gone';
    log().warn('refund held for a person', { id: job.row.id, chain: job.source.chain, address: job.source.address, reason });
    need().onRefundEvent?.({ kind: 'held', chain: job.source.chain, reason, rows: 1 });
    return 'held';
  };

  /** The chain's fees now, from eth_feeHistory (legacy: eth_gasPrice). */
  const marketFees = async (): Promise<RefundFees> => {
    const [history, gasPrice] = await Promise.all([
      rpc().getFeeHistory({ blockCount: 5, rewardPercentiles: [50], blockTag: 'latest' }),
      rpc().getGasPrice(),
    ]);
    return firstFees(history, gasPrice);
  };

  /** Signs one transaction of `job`'s address at `nonce`. */
  const signVariant = async (
    job: RefundJob,
    kind: RefundVariant['kind'],
    nonce: number,
    to: string,
    value: bigint,
    gas: bigint,
    fees: RefundFees,
  ): Promise<RefundVariant> => {
    const chainId = evmChainId(job.source.chain)!;
    const common = { chainId, nonce, to: to as Hex, value, gas };
    const tx: TransactionSerializable =
      fees.kind === 'legacy'
        ? { ...common, type: 'legacy', gasPrice: fees.gasPrice }
        : { ...common, type: 'eip1559', maxFeePerGas: fees.maxFeePerGas, maxPriorityFeePerGas: fees.maxPriorityFeePerGas };
    const raw = await need().signer.sign(job.source.chain, job.source.workflowId, tx);
    return {
      kind,
      hash: keccak256(raw),
      raw,
      to: to.toLowerCase(),
      value: value.toString(),
      gas: gas.toString(),
      ...feeFields(fees),
      signedAt: new Date().toISOString(),
    };
  };

  /**
   * Whether the row's transfer is on the chain as the ledger says, and deep enough to pay back
   * (finalized, or deeper than the reorg window): `shallow` while it may still be (not deep enough,
   * or not found: a reorganisation the watcher will report), `refuted` when the chain says it is no
   * such transfer (another amount, a failed transaction, paid by a deposit address).
   */
  const provenDeep = async (job: RefundJob): Promise<'deep' | 'shallow' | 'refuted'> => {
    const { row, source } = job;
    const transferIndex = row.transferIndex;
    const { tx, head } = await readChainTransaction(rpc(), row.txHash, transferIndex > 0);
    const payer = tx?.from?.toLowerCase();
    const servicePayers = payer === undefined ? new Set<string>() : await need().payments.depositAddressesAmong(source.chain, [payer]);
    const proof = proveDeposit(
      { chain: source.chain, address: source.address, asset: 'native', minAmount: '0' },
      { txHash: row.txHash, chain: source.chain, transferIndex, asset: 'native' },
      tx,
      head,
      1,
      [],
      servicePayers,
    );
    if (!proof.ok) return proof.retryable ? 'shallow' : 'refuted';
    if (proof.deposit.amount !== row.amount) return 'refuted';
    const block = proof.deposit.blockNumber!;
    const finalized = await rpc()
      .getBlock({ blockTag: 'finalized' })
      .then((b) => (b.number === null ? undefined : Number(b.number)))
      .catch(() => undefined);
    return (finalized !== undefined && block <= finalized) || head - block + 1 > need().windowSize ? 'deep' : 'shallow';
  };

  /** Holds every due row of the address and says so loudly: its nonce is not what the ledger says. */
  const stopAddress = async (job: RefundJob, found: string) => {
    const rows = await need().payments.holdAddress(job.source, 'nonce-mismatch');
    log().error('automatic refunds from this deposit address stopped: its nonce is not what the refunds ledger records', {
      chain: job.source.chain,
      address: job.source.address,
      noncesMined: job.source.noncesMined,
      found,
      rowsHeld: rows,
    });
    need().onRefundEvent?.({ kind: 'nonce-mismatch', chain: job.source.chain, address: job.source.address });
    if (rows > 0) need().onRefundEvent?.({ kind: 'held', chain: job.source.chain, reason: 'nonce-mismatch', rows });
  };

  return {
    async refundAddressesToPay() {
      const d = need();
      const chain = `evm:${await rpc().getChainId()}`;
      const unpayable = d.enabled ? await d.payments.holdUnpayable() : 0;
      if (unpayable > 0) d.onRefundEvent?.({ kind: 'held', chain, reason: 'off-chain', rows: unpayable });
      const addresses = await d.payments.addressesToPay(chain, ADDRESSES_PER_SWEEP, d.enabled);
      return { chain, addresses, pollIntervalMs: d.pollIntervalMs };
    },

    async nextRefund(input: RefundAddress) {
      const job = await need().payments.next(input.chain, input.address);
      if (!job) return undefined;
      const inFlight = job.row.refundNonce !== undefined && job.row.refundBlock === undefined;
      if (!inFlight && !need().enabled) return undefined;
      return { id: job.row.id, step: inFlight ? 'watch' : 'sign' };
    },

    async signRefund(input) {
      const d = need();
      if (!d.enabled) return 'wait';
      const job = await jobOf(input);
      if (!job || job.row.state !== 'due') return 'gone';
      const { row, source } = job;
      const policy = holdBeforeSigning(row, source, d.nativeLimit);
      if (policy) return held(job, policy);
      const destination = refundDestination(row, source);
      if ('hold' in destination) return held(job, destination.hold);
      const to = destination.to;
      if (await d.payments.isDepositAddress(to))
        return held(job, source.refundAddress !== undefined ? 'refund-address-refused' : 'no-destination');
      await checkChain(source.chain);
      if (source.refundAddress === undefined && row.payerKind === undefined) {
        if (payerKind(await rpc().getCode({ address: to as Hex })) === 'contract') return held(job, 'contract-payer');
      }
      if ((await d.signer.address(source.chain, source.workflowId)).toLowerCase() !== source.address) return held(job, 'no-key');
      const depth = await provenDeep(job);
      if (depth === 'refuted') return held(job, 'off-chain');
      if (depth === 'shallow') return 'wait';
      // The ledger's count of mined refunds must be the address's nonce: anything else was spent by
      // someone else (by hand, or a ledger restored from an older backup), and signing now could
      // pay twice or never be mined.
      const address = source.address as Hex;
      const [latest, pending] = await Promise.all([
        rpc().getTransactionCount({ address, blockTag: 'latest' }),
        rpc().getTransactionCount({ address, blockTag: 'pending' }),
      ]);
      if (latest !== source.noncesMined || pending !== latest) {
        await stopAddress(job, `latest ${latest}, pending ${pending}`);
        return 'held';
      }
      // The row's own money left on the address: its amount less what a cancel of it cost.
      const amount = BigInt(row.amount!) - BigInt(row.feesSpent ?? '0');
      const estimate = await rpc().estimateGas({ account: address, to: to as Hex, value: amount / 2n });
      const gas = gasLimit(estimate);
      const fees = await marketFees();
      const value = refundValue(amount, gas, fees);
      if (value === undefined || tooSmall(amount, gas, fees, d.minFeeMultiple)) return held(job, 'too-small');
      const variant = await signVariant(job, 'refund', latest, to, value, gas, fees);
      if (!(await d.payments.startPaying(job, latest, to, variant))) return 'gone';
      log().info('refund signed', {
        id: row.id,
        chain: source.chain,
        from: source.address,
        to,
        nonce: latest,
        hash: variant.hash,
        value: variant.value,
      });
      d.onRefundEvent?.({ kind: 'signed', chain: source.chain });
      return 'paying';
    },

    async broadcastRefund(input) {
      const d = need();
      const job = await jobOf(input);
      const variants = job?.row.refundVariants;
      if (!job || !variants || job.row.refundBlock !== undefined) return;
      await checkChain(job.source.chain);
      const head = Number(await rpc().getBlockNumber({ cacheTime: 0 }));
      // A variant counts as sent (its wait for a replacement starts) once the node took it, or says it has it.
      const sent = new Set<string>();
      for (const v of variants) {
        try {
          await rpc().request({ method: 'eth_sendRawTransaction', params: [v.raw as Hex] });
          sent.add(v.hash);
        } catch (err) {
          const message = (err as Error).message;
          if (/HttpRequestError|TimeoutError/.test((err as Error).name)) throw err;
          if (ALREADY_SENT.test(message)) sent.add(v.hash);
          else log().warn('refund transaction refused by the node', { id: job.row.id, hash: v.hash, error: message.slice(0, 300) });
        }
      }
      if (variants.every((v) => v.sentAtBlock !== undefined || !sent.has(v.hash))) return;
      const marked = variants.map((v) => (v.sentAtBlock === undefined && sent.has(v.hash) ? { ...v, sentAtBlock: head } : v));
      await d.payments.updateVariants(job.row.id, variants, marked);
    },

    async checkRefund(input) {
      const d = need();
      const job = await jobOf(input);
      const variants = job?.row.refundVariants;
      if (!job || !variants || job.row.refundNonce === undefined || job.row.refundBlock !== undefined) return 'mined';
      const { row, source } = job;
      const nonce = job.row.refundNonce;
      // The nonce first: a variant mined after this read still shows its receipt below.
      const latest = await rpc().getTransactionCount({ address: source.address as Hex, blockTag: 'latest' });
      const head = Number(await rpc().getBlockNumber({ cacheTime: 0 }));
      const confirmations = d.confirmations(source.chain) ?? d.windowSize;
      for (const v of variants) {
        const receipt = await rpc()
          .getTransactionReceipt({ hash: v.hash as Hex })
          .catch((err: unknown) => {
            if (err instanceof TransactionReceiptNotFoundError) return undefined;
            throw err;
          });
        if (!receipt) continue;
        const block = Number(receipt.blockNumber);
        if (head - block + 1 < confirmations) return 'pending';
        const after = await d.payments.recordMined(job, {
          hash: v.hash,
          block,
          succeeded: receipt.status === 'success',
          fee: (receipt.gasUsed * receipt.effectiveGasPrice).toString(),
        });
        if (after) {
          log().info('refund nonce mined', { id: row.id, hash: v.hash, kind: v.kind, block, state: after.state });
          if (after.state === 'refunded') d.onRefundEvent?.({ kind: 'paid', chain: source.chain, whileVoid: row.state === 'void' });
          if (after.holdReason === 'reverted' && v.kind === 'refund' && receipt.status !== 'success')
            d.onRefundEvent?.({ kind: 'held', chain: source.chain, reason: 'reverted', rows: 1 });
          if (row.state === 'void' && after.state === 'refunded')
            log().error('a refund was mined for a row voided while it was paid: its transfer was reorganised away', { id: row.id });
        }
        return 'mined';
      }
      if (latest > nonce) {
        await d.payments.recordNonceUsedElsewhere(job, head);
        await stopAddress(job, `nonce ${nonce} mined by a transaction the ledger did not sign`);
        return 'mined';
      }
      if (row.state === 'void' && !variants.some((v) => v.kind === 'cancel')) return 'cancel';
      const last = variants[variants.length - 1];
      if (last.sentAtBlock === undefined || head - last.sentAtBlock < d.replaceAfterBlocks || row.state === 'held') return 'pending';
      return 'replace';
    },

    async replaceRefund(input) {
      const d = need();
      const job = await jobOf(input);
      const variants = job?.row.refundVariants;
      if (!job || !variants || job.row.refundNonce === undefined || job.row.refundBlock !== undefined) return 'gone';
      const { row, source } = job;
      const nonce = job.row.refundNonce;
      await checkChain(source.chain);
      const kind: RefundVariant['kind'] = row.state === 'void' ? 'cancel' : 'refund';
      const last = variants[variants.length - 1];
      const fees = replacementFees(feesOf(last), await marketFees());
      const amount = BigInt(row.amount!) - BigInt(row.feesSpent ?? '0');
      const gas = kind === 'cancel' ? 21_000n : BigInt(last.gas);
      if (!withinFeeCap(amount, gas, fees)) {
        if (row.state === 'paying' && (await d.payments.holdInFlight(row.id, 'fee-cap'))) {
          log().warn('refund held at its fee cap: its transactions stay out until one is mined', { id: row.id, nonce });
          d.onRefundEvent?.({ kind: 'held', chain: source.chain, reason: 'fee-cap', rows: 1 });
        }
        return 'capped';
      }
      const to = kind === 'cancel' ? source.address : row.refundTo!;
      const value = kind === 'cancel' ? 0n : (refundValue(amount, gas, fees) ?? 0n);
      if (kind === 'refund' && value === 0n) return 'capped';
      const variant = await signVariant(job, kind, nonce, to, value, gas, fees);
      if (!(await d.payments.updateVariants(row.id, variants, [...variants, variant]))) return 'gone';
      log().info('refund replaced at the same nonce', {
        id: row.id,
        kind,
        nonce,
        hash: variant.hash,
        maxCost: maxCost(gas, fees).toString(),
      });
      d.onRefundEvent?.({ kind: 'replaced', chain: source.chain, variant: kind });
      return 'signed';
    },
  };
}
