import { amountFor, DEFAULT_REFUND_MINIMUMS } from '../../config/refund-limits';
import type { ApiConfig } from '../../config/config';
import type { DepositTarget } from '../../domain/execution-record';

/** What prepare's answer says of deposits the execution will not take: who pays them back, from what amount, about when. */
export interface RefundPolicy {
  /** Whether the service pays them back by itself (REFUND_PAYMENTS); false: a person settles every one. */
  automatic: boolean;
  /** The least it pays back by itself, in base units of the target's asset (REFUND_MINIMUMS); absent: no minimum. */
  minimum?: string;
  /** About how long after a transfer its refund is sent, in seconds; absent for a chain whose block time is not known here. */
  expectedSeconds?: number;
  /** The same in words. */
  description: string;
}

/** Seconds per block of the chains the service knows (the dev chains as `npm start` mines them). */
const BLOCK_SECONDS: Readonly<Record<string, number>> = { 'evm:1': 12, 'evm:11155111': 12, 'evm:17000': 12, 'evm:31337': 1, 'evm:1337': 1 };
/** The refund sweep's period (workers), and blocks for the refund itself to be mined. */
const SWEEP_S = 5;
const MINING_BLOCKS = 2;

/**
 * The refund policy of a deposit target: a refund is sent once the transfer's block is deeper than
 * CHAIN_REORG_WINDOW (a reorganisation can no longer take it back), by the next sweep.
 */
export function refundPolicy(config: Pick<ApiConfig, 'refunds' | 'chain'>, target: DepositTarget): RefundPolicy {
  const automatic = config.refunds.payments === 'on';
  const minimum = amountFor(config.refunds.minimums, DEFAULT_REFUND_MINIMUMS, config.chain?.tokens ?? [], target.chain, target.asset);
  const block = BLOCK_SECONDS[target.chain];
  const window = config.chain?.windowSize;
  const expectedSeconds = block === undefined || window === undefined ? undefined : (window + MINING_BLOCKS) * block + SWEEP_S;
  const to = target.refundAddress ? `to ${target.refundAddress}` : "to the transfer's payer (a payer with code waits for a person)";
  const description = automatic
    ? `A deposit this execution does not take is paid back automatically ${to}${minimum === undefined ? '' : `, from ${minimum} base units up`}${expectedSeconds === undefined ? '' : `, about ${expectedSeconds} s after the transfer`}, less the transfer's fee for the chain's coin.`
    : 'A deposit this execution does not take is owed back and settled by a person (the service pays no refund by itself here).';
  return {
    automatic,
    ...(minimum === undefined ? {} : { minimum: minimum.toString() }),
    ...(expectedSeconds === undefined ? {} : { expectedSeconds }),
    description,
  };
}
