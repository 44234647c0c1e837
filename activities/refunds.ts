import { ApplicationFailure, Context } from '@temporalio/activity';
import { encodeFunctionData, erc20Abi, type Hex, type PublicClient, type TransactionReceipt } from 'viem';
import type { RefundActivities, RefundAddress, RefundStep } from '../contracts/activities';
import { REFUND_ADDRESS_WORKFLOW_TYPE } from '../contracts/temporal';
import type { HoldReason, RefundVariant } from '../contracts/refunds';
import type { GasAccountLedger } from '../db/gas-account';
import { rowIds, type RefundJob, type RefundPayments, type RefundSource } from '../db/refund-payments';
import type { RefundRow } from '../db/refund-ledger';
import { payerAt, proveDeposit, type AllowedToken } from '../domain/deposit-proof';
import { evmChainId } from '../domain/deposit-key';
import type { DepositAsset } from '../domain/execution-state';
import { payerKind } from '../domain/payer-kind';
import {
  feesOf,
  gasLimit,
  maxCost,
  refundValue,
  replacementFees,
  tooSmall,
  withinFeeCap,
  withinTokenFeeCap,
  type RefundFees,
} from '../domain/refund-fees';
import { moneyLeft, REFUND_BATCH_ROWS, rowsPaidWith } from '../domain/refund-batch';
import { holdBeforeSigning, isTokenAsset, refundDestination, type RefundRules } from '../domain/refund-policy';
import { tokenTransfer } from '../domain/transfers';
import { chainClient } from '../lib/chain-client';
import { isExecutionRevert } from '../lib/chain-errors';
import { readChainTransaction } from '../lib/chain-transaction';
import type { DepositKeyRef, Signer } from '../lib/signer';
import { createGasTopUps } from './gas-top-ups';
import { markSent, marketFees, mostCost, nonceTakenForSure, receiptOf, sendAll, signRecorded } from './signed-transactions';

/** The deposit address key a row is signed with. */
const keyOf = (source: RefundSource): DepositKeyRef => ({
  chain: source.chain,
  workflowId: source.workflowId,
  derivation: source.derivation,
});

/** What the refunder tells the worker, for its metrics (activities/ keeps none). */
export type RefundEvent =
  | { kind: 'signed'; chain: string }
  | { kind: 'replaced'; chain: string; variant: 'refund' | 'cancel' }
  | { kind: 'held'; chain: string; reason: HoldReason; rows: number }
  | { kind: 'paid'; chain: string; whileVoid: boolean }
  /** A refund's nonce was mined another way than a variant of the ledger, or the address's nonce is not the ledger's count: automatic refunds from it stop. */
  | { kind: 'nonce-mismatch'; chain: string; address: string }
  /** The gas account signed a top-up of a deposit address (a token refund's fee). */
  | { kind: 'topped-up'; chain: string }
  /** The gas account's balance, read at every sweep (and when it is too low to top up). */
  | { kind: 'gas-balance'; chain: string; address: string; wei: bigint };

export interface RefundDeps {
  rpcUrl: string;
  payments: RefundPayments;
  /** Signs every refund, cancel and gas top-up (the key files here, or a signer service). */
  signer: Signer;
  /** REFUND_PAYMENTS: false, no new refund is signed. */
  enabled: boolean;
  /** The chain's DEPOSIT_CONFIRMATIONS: a refund is recorded mined this deep. */
  confirmations: (chain: string) => number | undefined;
  /** CHAIN_REORG_WINDOW: a transfer this deep (or finalized) is paid back. */
  windowSize: number;
  /** REFUND_LIMITS and REFUND_MINIMUMS, per asset. */
  limit: RefundRules['limit'];
  minimum: RefundRules['minimum'];
  /** DEPOSIT_TOKENS: a token row's transfer is proven like a deposit in it. */
  tokens: readonly AllowedToken[];
  /** The signer's gas account (REFUND_GAS_KEY_FILE's); undefined: token rows are held `no-gas-key`. */
  gasAccount?: { address: `0x${string}` };
  gasAccounts: GasAccountLedger;
  minFeeMultiple: number;
  replaceAfterBlocks: number;
  /** REFUND_SWEEP_ADDRESSES: deposit addresses one sweep hands to refund workflows, at most. */
  sweepAddresses: number;
  /** How long a refund workflow waits between looks at the chain (CHAIN_POLL_INTERVAL_MS). */
  pollIntervalMs: number;
  onRefundEvent?: (event: RefundEvent) => void;
  /** REFUND_OPEN_RUNS: refund workflows running at once on the sweep's task queue, at most (decision 0089). */
  openRuns: number;
}

/**
 * Looks at a refund whose simulation reverts before it is held `refund-reverts`: the activity's
 * attempts, retried with the workflow's backoff (1, 2, 4, 8 s), so a node that answered one
 * simulation wrongly does not hold a payable row.
 */
export const REVERT_LOOKS = 5;

/** The failure type of a refund whose simulation reverted, retried until REVERT_LOOKS. */
export const REFUND_REVERTS_FAILURE = 'RefundReverts';

/**
 * The refund activities (contracts/activities.ts RefundActivities) over the worker's chain node and
 * the read model; without `deps` (no CHAIN_RPC_URL) every call throws. A token refund's fee comes
 * from the gas account (activities/gas-top-ups.ts); every transaction is signed and sent by
 * activities/signed-transactions.ts.
 */
export function createRefundActivities(deps: RefundDeps | undefined): RefundActivities {
  let client: PublicClient | undefined;
  const need = (): RefundDeps => {
    if (!deps) throw new Error('this worker has no CHAIN_RPC_URL: it pays no refunds');
    return deps;
  };
  const rpc = () => (client ??= chainClient(need().rpcUrl));
  const log = () => Context.current().log;
  const topUps = createGasTopUps(need, rpc);

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

  /** Signs one transaction of `job`'s address at `nonce`, paying (or cancelling) rows `rows`. */
  const signVariant = async (
    job: RefundJob,
    rows: readonly string[],
    kind: RefundVariant['kind'],
    nonce: number,
    to: string,
    value: bigint,
    gas: bigint,
    fees: RefundFees,
    data?: Hex,
  ): Promise<RefundVariant> => {
    const { signer } = need();
    const signed = await signRecorded(job.source.chain, { nonce, to, value, gas, data }, fees, (tx) =>
      signer.sign({ kind, key: keyOf(job.source), rows: [...rows], tx }),
    );
    return { kind, ...signed };
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
    const asset = (row.asset ?? 'native') as DepositAsset;
    const { tx, head } = await readChainTransaction(rpc(), row.txHash, asset === 'native' && transferIndex > 0);
    const payer = tx === undefined ? undefined : payerAt(tx, asset, transferIndex);
    const servicePayers = payer === undefined ? new Set<string>() : await need().payments.servicePayersAmong(source.chain, [payer]);
    const proof = proveDeposit(
      { chain: source.chain, address: source.address, asset, minAmount: '0' },
      { txHash: row.txHash, chain: source.chain, transferIndex, asset },
      tx,
      head,
      1,
      need().tokens,
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

  /**
   * The address's other `due` rows that `job`'s refund transaction to `to` pays too: the policy's
   * choice (domain/refund-batch.ts), each proven deep on the chain; a row not deep yet, or one the
   * chain contradicts, waits for its own turn.
   */
  const paidWith = async (job: RefundJob, to: string): Promise<RefundRow[]> => {
    const d = need();
    const rules = { limit: d.limit, minimum: d.minimum, gasAccount: d.gasAccount !== undefined };
    const candidates = rowsPaidWith(job.row, await d.payments.dueAlongside(job, 4 * REFUND_BATCH_ROWS), job.source, rules);
    const members: RefundRow[] = [];
    for (const row of candidates) {
      const sameTo = refundDestination(row, job.source);
      if (!('to' in sameTo) || sameTo.to !== to) continue;
      if ((await provenDeep({ row, members: [], source: job.source })) === 'deep') members.push(row);
    }
    return members;
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

  /**
   * The gas a refund transaction needs, from the node's simulation. A simulation that reverts (the
   * destination's code refuses the money, the token refuses the transfer) fails the attempt; at
   * the REVERT_LOOKS-th attempt the row is held `refund-reverts` instead, and the address's other
   * rows go on. Any other error is the node's and is retried for ever.
   */
  const estimateOrHold = async (job: RefundJob, tx: { account: Hex; to: Hex; data?: Hex; value?: bigint }): Promise<bigint | 'held'> => {
    try {
      return await rpc().estimateGas(tx);
    } catch (err) {
      if (!isExecutionRevert(err)) throw err;
      const attempt = Context.current().info.attempt;
      const reason = err instanceof Error ? err.message.split('\n')[0] : String(err);
      if (attempt < REVERT_LOOKS)
        throw ApplicationFailure.create({
          type: REFUND_REVERTS_FAILURE,
          message: `refund ${job.row.id} reverts when simulated (look ${attempt} of ${REVERT_LOOKS}): ${reason}`,
        });
      log().warn('refund reverts when simulated, look after look: held, the address goes on with its other rows', {
        id: job.row.id,
        chain: job.source.chain,
        address: job.source.address,
        to: tx.to,
        looks: attempt,
        reason,
      });
      await held(job, 'refund-reverts');
      return 'held';
    }
  };

  /** Whether a token refund's receipt holds the token's `Transfer` of its rows' amount from the deposit address to their destination. */
  const transferLogged = (receipt: TransactionReceipt, job: RefundJob): boolean => {
    const amount = [job.row, ...job.members].reduce((total, r) => total + BigInt(r.amount!), 0n);
    return receipt.logs.some((l) => {
      const t = tokenTransfer({ address: l.address, topics: l.topics, data: l.data });
      return (
        t !== undefined &&
        `erc20:${t.token}` === job.row.asset?.toLowerCase() &&
        t.from === job.source.address &&
        t.to === job.row.refundTo &&
        t.amount === amount.toString()
      );
    });
  };

  return {
    async refundAddressesToPay() {
      const d = need();
      const chain = `evm:${await rpc().getChainId()}`;
      const unpayable = d.enabled ? await d.payments.holdUnpayable() : 0;
      if (unpayable > 0) d.onRefundEvent?.({ kind: 'held', chain, reason: 'off-chain', rows: unpayable });
      if (d.gasAccount) {
        // Registered before its first top-up, so that the watcher knows its transfers for the service's own.
        const address = d.gasAccount.address;
        const [latest, wei] = await Promise.all([
          rpc().getTransactionCount({ address, blockTag: 'latest' }),
          rpc().getBalance({ address }),
        ]);
        await d.gasAccounts.register(chain, address, latest);
        d.onRefundEvent?.({ kind: 'gas-balance', chain, address: address.toLowerCase(), wei });
      }
      const addresses = await d.payments.addressesToPay(chain, d.sweepAddresses, d.enabled);
      // Each running refund workflow holds a place in the refunds worker's cache, which must never
      // have to evict one (decision 0089): the sweep starts only what REFUND_OPEN_RUNS leaves.
      const { client, info } = Context.current();
      const { count } = await client.workflow.count(
        `TaskQueue = '${info.taskQueue}' AND WorkflowType = '${REFUND_ADDRESS_WORKFLOW_TYPE}' AND ExecutionStatus = 'Running'`,
      );
      return { chain, addresses, pollIntervalMs: d.pollIntervalMs, room: Math.max(0, d.openRuns - count) };
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
      const policy = holdBeforeSigning(row, source, { limit: d.limit, minimum: d.minimum, gasAccount: d.gasAccount !== undefined });
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
      if ((await d.signer.depositAddress(keyOf(source))).toLowerCase() !== source.address) return held(job, 'no-key');
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
      // No decision on one read that a lagging node could cause: a count behind the ledger's is the
      // node's lag, a transaction waiting in the pool is judged once mined, and a count above the
      // ledger's holds the address only when a block `confirmations` deep shows it too.
      if (latest < source.noncesMined || pending !== latest) return 'wait';
      if (latest > source.noncesMined) {
        const head = Number(await rpc().getBlockNumber({ cacheTime: 0 }));
        const confirmations = d.confirmations(source.chain) ?? d.windowSize;
        const deep = await rpc().getTransactionCount({ address, blockNumber: BigInt(Math.max(0, head - confirmations + 1)) });
        if (deep <= source.noncesMined) return 'wait';
        await stopAddress(job, `latest ${latest}, ${deep} ${confirmations} blocks deep`);
        return 'held';
      }
      // The address's other rows to the same destination in the same asset go in the same
      // transaction, each proven on the chain like the first (one fee, one top-up for them all).
      const members = await paidWith(job, to);
      const rows = [row, ...members];
      const ids = rows.map((r) => r.id);
      let variant: RefundVariant;
      if (isTokenAsset(row.asset)) {
        // The whole amount goes back; the gas account pays the fee (broadcastRefund tops the address up first).
        const token = row.asset.slice('erc20:'.length) as Hex;
        const sum = rows.reduce((total, r) => total + BigInt(r.amount!), 0n);
        const data = encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to as Hex, sum] });
        const estimate = await estimateOrHold(job, { account: address, to: token, data });
        if (estimate === 'held') return 'held';
        const gas = gasLimit(estimate);
        variant = await signVariant(job, ids, 'refund', latest, token, 0n, gas, await marketFees(rpc()), data);
      } else {
        // The rows' own money left on the address: their amounts less what cancels of them cost.
        const amount = rows.reduce((total, r) => total + moneyLeft(r), 0n);
        const estimate = await estimateOrHold(job, { account: address, to: to as Hex, value: amount / 2n });
        if (estimate === 'held') return 'held';
        const gas = gasLimit(estimate);
        const fees = await marketFees(rpc());
        const value = refundValue(amount, gas, fees);
        if (value === undefined || tooSmall(amount, gas, fees, d.minFeeMultiple)) return held(job, 'too-small');
        variant = await signVariant(job, ids, 'refund', latest, to, value, gas, fees);
      }
      if (!(await d.payments.startPaying(job, latest, to, variant, members))) return 'gone';
      log().info('refund signed', {
        id: row.id,
        chain: source.chain,
        from: source.address,
        to,
        nonce: latest,
        hash: variant.hash,
        value: variant.value,
        ...(members.length > 0 ? { alsoPays: members.map((m) => m.id) } : {}),
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
      // A token refund's fee is the gas account's: its newest transaction goes out once top-ups cover it.
      if (isTokenAsset(job.row.asset) && !(await topUps.funded(job, mostCost(variants[variants.length - 1])))) return;
      const head = Number(await rpc().getBlockNumber({ cacheTime: 0 }));
      const marked = markSent(variants, await sendAll(rpc(), variants, job.row.id), head);
      if (marked) await d.payments.updateVariants(rowIds(job), variants, marked);
    },

    async checkRefund(input) {
      const d = need();
      const job = await jobOf(input);
      const variants = job?.row.refundVariants;
      if (!job || !variants || job.row.refundNonce === undefined || job.row.refundBlock !== undefined) return 'mined';
      const { row, source } = job;
      const rows = [row, ...job.members];
      const nonce = job.row.refundNonce;
      // The nonce first: a variant mined after this read still shows its receipt below.
      const latest = await rpc().getTransactionCount({ address: source.address as Hex, blockTag: 'latest' });
      const head = Number(await rpc().getBlockNumber({ cacheTime: 0 }));
      const confirmations = d.confirmations(source.chain) ?? d.windowSize;
      const token = isTokenAsset(row.asset);
      for (const v of variants) {
        const receipt = await receiptOf(rpc(), v.hash);
        if (!receipt) continue;
        const block = Number(receipt.blockNumber);
        if (head - block + 1 < confirmations) return 'pending';
        const fee = receipt.gasUsed * receipt.effectiveGasPrice;
        const succeeded = receipt.status === 'success';
        // A token refund's fee was the gas account's top-ups: what they left is recorded, the row's amount is untouched.
        const left = token ? (await d.gasAccounts.toppedUp(row.id)) - fee : 0n;
        const after = await d.payments.recordMined(job, {
          hash: v.hash,
          block,
          succeeded,
          ...(token
            ? {
                gasLeft: (left > 0n ? left : 0n).toString(),
                ...(v.kind === 'refund' && succeeded && !transferLogged(receipt, job) ? { noTransferLog: true } : {}),
              }
            : { fee: fee.toString() }),
        });
        if (after) {
          log().info('refund nonce mined', {
            id: row.id,
            hash: v.hash,
            kind: v.kind,
            block,
            state: after.state,
            ...(job.members.length > 0 ? { alsoPays: job.members.map((m) => m.id) } : {}),
          });
          if (after.state === 'refunded')
            for (const r of rows) d.onRefundEvent?.({ kind: 'paid', chain: source.chain, whileVoid: r.state === 'void' });
          if (after.holdReason === 'reverted' && v.kind === 'refund' && receipt.status !== 'success')
            d.onRefundEvent?.({ kind: 'held', chain: source.chain, reason: 'reverted', rows: rows.length });
          if (after.holdReason === 'no-transfer-log') {
            log().error("a token refund was mined without the token's Transfer of its amount to its destination: held for a person", {
              id: row.id,
              hash: v.hash,
            });
            d.onRefundEvent?.({ kind: 'held', chain: source.chain, reason: 'no-transfer-log', rows: rows.length });
          }
          for (const r of rows)
            if (r.state === 'void' && after.state === 'refunded')
              log().error('a refund was mined for a row voided while it was paid: its transfer was reorganised away', {
                id: r.id,
                hash: v.hash,
              });
        }
        return 'mined';
      }
      if (latest > nonce) {
        const taken = await nonceTakenForSure(
          rpc(),
          { address: source.address, nonce, head, confirmations, seen: job.nonceGoneSeenBlock },
          (at) => d.payments.rememberNonceGone(row.id, at),
        );
        if (!taken) return 'pending';
        await d.payments.recordNonceUsedElsewhere(job, head);
        await stopAddress(job, `nonce ${nonce} mined by a transaction the ledger did not sign`);
        return 'mined';
      }
      // One row of the transaction voided (its transfer reorganised away) takes the nonce back for all.
      if (rows.some((r) => r.state === 'void') && !variants.some((v) => v.kind === 'cancel')) return 'cancel';
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
      const rows = [row, ...job.members];
      const kind: RefundVariant['kind'] = rows.some((r) => r.state === 'void') ? 'cancel' : 'refund';
      const token = isTokenAsset(row.asset);
      const last = variants[variants.length - 1];
      // The refund variant a new one repeats (a cancel may be the newest, on a row restored after it was voided).
      const refund = [...variants].reverse().find((v) => v.kind === 'refund') ?? last;
      const fees = replacementFees(feesOf(last), await marketFees(rpc()));
      const amount = rows.reduce((total, r) => total + moneyLeft(r), 0n);
      const gas = kind === 'cancel' ? 21_000n : BigInt(refund.gas);
      const withinCap = token
        ? withinTokenFeeCap(maxCost(BigInt(variants[0].gas), feesOf(variants[0])), maxCost(gas, fees))
        : withinFeeCap(amount, gas, fees);
      if (!withinCap) {
        const capped = row.state === 'paying' ? await d.payments.holdInFlight(rowIds(job), 'fee-cap') : 0;
        if (capped > 0) {
          log().warn('refund held at its fee cap: its transactions stay out until one is mined', { id: row.id, nonce, rows: capped });
          d.onRefundEvent?.({ kind: 'held', chain: source.chain, reason: 'fee-cap', rows: capped });
        }
        return 'capped';
      }
      const to = kind === 'cancel' ? source.address : token ? refund.to : row.refundTo!;
      const value = kind === 'cancel' || token ? 0n : (refundValue(amount, gas, fees) ?? 0n);
      if (kind === 'refund' && !token && value === 0n) return 'capped';
      const data = kind === 'refund' && token ? (refund.data as Hex) : undefined;
      const variant = await signVariant(job, rowIds(job), kind, nonce, to, value, gas, fees, data);
      if (!(await d.payments.updateVariants(rowIds(job), variants, [...variants, variant]))) return 'gone';
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
