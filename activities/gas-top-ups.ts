import { Context } from '@temporalio/activity';
import type { Hex, PublicClient } from 'viem';
import type { TopUp, TopUpVariant } from '../db/gas-account';
import type { RefundJob } from '../db/refund-payments';
import { feesOf, maxCost, replacementFees, withinTokenFeeCap, type RefundFees } from '../domain/refund-fees';
import type { RefundDeps } from './refunds';
import { markSent, marketFees, mostCost, nonceTakenForSure, receiptOf, sendAll, signRecorded } from './signed-transactions';

/** Top-ups one gas account has out at once, at most: each nonce waits for the one below it to be mined. */
export const TOP_UPS_IN_FLIGHT = 8;

/**
 * The gas account's top-ups of deposit addresses: a token refund's fee is paid from the gas
 * account (REFUND_GAS_KEY_FILE), sent to the deposit address first, up to TOP_UPS_IN_FLIGHT at
 * once per account (for different refunds, at consecutive nonces: token refunds are not one per
 * confirmation period). `funded` is all the refund activities ask; the rest works the account's
 * top-ups.
 */
export function createGasTopUps(
  need: () => RefundDeps,
  rpc: () => PublicClient,
): { funded(job: RefundJob, cost: bigint): Promise<boolean> } {
  const log = () => Context.current().log;

  /** Signs a gas account's top-up of `to` at `nonce`, for refund row `refund`. */
  const signTopUp = (chain: string, refund: string, nonce: number, to: string, value: bigint, fees: RefundFees): Promise<TopUpVariant> =>
    signRecorded(chain, { nonce, to, value, gas: 21_000n }, fees, (tx) => need().signer.sign({ kind: 'top-up', chain, refund, tx }));

  /** Sends a top-up's variants, recording the head on those first sent. */
  const sendTopUp = async (topUp: TopUp, head: number) => {
    const marked = markSent(topUp.variants, await sendAll(rpc(), topUp.variants, topUp.id), head);
    if (marked) await need().gasAccounts.updateVariants(topUp.id, topUp.variants, marked);
  };

  /**
   * Works one of the gas account's top-ups being sent, whoever's refund it pays: records it once a variant
   * is mined deep enough (with the account's count), `lost` when a transaction it did not sign took
   * its nonce, replaced at the same nonce with raised fees after REFUND_REPLACE_AFTER_BLOCKS
   * (within the token fee cap), else sent again.
   */
  const workTopUp = async (topUp: TopUp) => {
    const d = need();
    // The nonce first: a variant mined after this read still shows its receipt below.
    const latest = await rpc().getTransactionCount({ address: topUp.account as Hex, blockTag: 'latest' });
    const head = Number(await rpc().getBlockNumber({ cacheTime: 0 }));
    const confirmations = d.confirmations(topUp.chain) ?? d.windowSize;
    for (const v of topUp.variants) {
      const receipt = await receiptOf(rpc(), v.hash);
      if (!receipt) continue;
      const block = Number(receipt.blockNumber);
      if (head - block + 1 < confirmations) return;
      const fee = (receipt.gasUsed * receipt.effectiveGasPrice).toString();
      if (await d.gasAccounts.recordMined(topUp, { hash: v.hash, block, fee }))
        log().info('gas top-up mined', { refund: topUp.refundId, to: topUp.to, nonce: topUp.nonce, hash: v.hash, value: topUp.value, fee });
      return;
    }
    if (latest > topUp.nonce) {
      const taken = await nonceTakenForSure(
        rpc(),
        { address: topUp.account, nonce: topUp.nonce, head, confirmations, seen: topUp.nonceGoneSeenBlock },
        (at) => d.gasAccounts.rememberNonceGone(topUp.id, at),
      );
      if (!taken) return;
      if (await d.gasAccounts.recordLost(topUp))
        log().error('a gas top-up lost its nonce to a transaction the service did not sign: the gas account is used by someone else', {
          chain: topUp.chain,
          account: topUp.account,
          nonce: topUp.nonce,
        });
      return;
    }
    let current = topUp;
    const last = topUp.variants[topUp.variants.length - 1];
    if (last.sentAtBlock !== undefined && head - last.sentAtBlock >= d.replaceAfterBlocks) {
      const fees = replacementFees(feesOf(last), await marketFees(rpc()));
      if (withinTokenFeeCap(maxCost(21_000n, feesOf(topUp.variants[0])), maxCost(21_000n, fees))) {
        const variant = await signTopUp(topUp.chain, topUp.refundId, topUp.nonce, topUp.to, BigInt(topUp.value), fees);
        if (!(await d.gasAccounts.updateVariants(topUp.id, topUp.variants, [...topUp.variants, variant]))) return;
        current = { ...topUp, variants: [...topUp.variants, variant] };
        log().info('gas top-up replaced at the same nonce', { refund: topUp.refundId, nonce: topUp.nonce, hash: variant.hash });
      } else log().warn('gas top-up at its fee cap: waiting for a block that takes it', { refund: topUp.refundId, nonce: topUp.nonce });
    }
    await sendTopUp(current, head);
  };

  /**
   * Signs, records and sends the gas account's next top-up: `value` wei to `job`'s deposit address,
   * at the nonce above the read model's count and the top-ups being sent (`sending`), when the
   * chain agrees: its `latest` count within them, nothing pending beyond them. A count behind the
   * chain with nothing sent and nothing pending follows it (someone sent from the account by hand:
   * no top-up of the service was in flight, so nothing is paid twice); anything else waits.
   */
  const topUp = async (job: RefundJob, account: string, value: bigint, sending: readonly TopUp[]) => {
    const d = need();
    const chain = job.source.chain;
    if (sending.length >= TOP_UPS_IN_FLIGHT) return;
    const [latest, pending, balance] = await Promise.all([
      rpc().getTransactionCount({ address: account as Hex, blockTag: 'latest' }),
      rpc().getTransactionCount({ address: account as Hex, blockTag: 'pending' }),
      rpc().getBalance({ address: account as Hex }),
    ]);
    const counted = await d.gasAccounts.register(chain, account, latest);
    let next = counted + sending.length;
    if (latest < counted || latest > next || pending > next) {
      if (sending.length === 0 && pending === latest && latest > counted && (await d.gasAccounts.resync(chain, account, counted, latest))) {
        log().warn('the gas account sent transactions the service did not sign: its count follows the chain', {
          chain,
          account,
          counted,
          latest,
        });
        next = latest;
      } else {
        log().warn(
          'the gas account has a transaction the service did not sign pending, or its nonce is not where the read model counts: no top-up now',
          { chain, account, counted, sending: sending.length, latest, pending },
        );
        return;
      }
    }
    const fees = await marketFees(rpc());
    // The balance is the chain's `latest`: top-ups still being sent will spend their part of it.
    const committed = sending.reduce((sum, t) => sum + mostCost(t.variants[t.variants.length - 1]), 0n);
    if (balance < committed + value + maxCost(21_000n, fees)) {
      log().error("the gas account is too low to pay a token refund's fee", {
        chain,
        account,
        balance: balance.toString(),
        value: value.toString(),
        committed: committed.toString(),
      });
      d.onRefundEvent?.({ kind: 'gas-balance', chain, address: account, wei: balance });
      return;
    }
    const variant = await signTopUp(chain, job.row.id, next, job.source.address, value, fees);
    const started = await d.gasAccounts.start(
      { chain, account, nonce: next, refundId: job.row.id, to: job.source.address, value, variant },
      TOP_UPS_IN_FLIGHT,
    );
    if (!started) return;
    log().info('gas top-up signed', {
      refund: job.row.id,
      to: job.source.address,
      nonce: next,
      hash: variant.hash,
      value: value.toString(),
    });
    d.onRefundEvent?.({ kind: 'topped-up', chain });
    const signed = (await d.gasAccounts.sending(chain, account)).find((t) => t.nonce === next && t.refundId === job.row.id);
    if (signed) await sendTopUp(signed, Number(await rpc().getBlockNumber({ cacheTime: 0 })));
  };

  /**
   * Whether the gas account's mined top-ups for `job`'s token row cover `cost` (the most its newest
   * transaction can cost). Until they do, works every top-up the gas account has out (whoever's
   * it is: a top-up is never waited for by one workflow alone), and signs the row's own when it
   * has none out.
   */
  const funded = async (job: RefundJob, cost: bigint): Promise<boolean> => {
    const d = need();
    if ((await d.gasAccounts.toppedUp(job.row.id)) >= cost) return true;
    if (!d.gasAccount) {
      log().error('a token refund waits for its fee: this worker has no gas account (REFUND_GAS_KEY_FILE)', { id: job.row.id });
      return false;
    }
    const account = d.gasAccount.address.toLowerCase();
    for (const flying of await d.gasAccounts.sending(job.source.chain, account)) await workTopUp(flying);
    // Read again after working them: a top-up recorded mined in between counts.
    const have = await d.gasAccounts.toppedUp(job.row.id);
    if (have >= cost) return true;
    const sending = await d.gasAccounts.sending(job.source.chain, account);
    if (sending.some((t) => t.refundId === job.row.id)) return false;
    await topUp(job, account, cost - have, sending);
    return false;
  };

  return { funded };
}
