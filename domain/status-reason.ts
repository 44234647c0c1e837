/**
 * Why an execution stands where it stands and what happens next, as a stable code and the words a
 * depositor reads (the API's `statusReason`, the status page's sentence). Pure: the record and what
 * the chain watcher says of a transfer not yet deep enough decide it.
 */
import type { ExecutionRecord, RefusedDeposit } from './execution-record';

export type StatusReasonCode =
  | 'awaiting-deposit'
  | 'deposit-confirming'
  | 'deposit-refused'
  | 'awaiting-signature'
  | 'signed'
  | 'expired-without-deposit'
  | 'expired-unsigned'
  | 'cancelled';

export const STATUS_REASON_CODES: readonly StatusReasonCode[] = [
  'awaiting-deposit',
  'deposit-confirming',
  'deposit-refused',
  'awaiting-signature',
  'signed',
  'expired-without-deposit',
  'expired-unsigned',
  'cancelled',
];

/** A transfer to the execution's deposit address that the chain watcher has seen but not yet signalled. */
export interface Confirming {
  txHash: string;
  blockNumber: number;
  /** Blocks its block has, counting itself (1 while it is the chain's newest). */
  seen: number;
  /** Blocks it needs before the execution takes it. */
  needed: number;
}

export interface StatusReason {
  code: StatusReasonCode;
  /** One or two sentences: why, and what happens next. */
  message: string;
  /** The deadline the message speaks of (expiresAt or signingDeadline), when there is one. */
  until?: string;
  /** Set with `deposit-confirming`. */
  confirmations?: Confirming;
}

/** A refusal the depositor can mend by sending a deposit that fits: below the minimum, another asset or chain. */
const MENDABLE: ReadonlyArray<RefusedDeposit['reason']> = ['below-minimum', 'wrong-asset', 'wrong-chain'];

const REFUSAL_WORDS: Record<string, string> = {
  'below-minimum': 'was less than the minimum',
  'wrong-asset': 'was of another asset than this execution takes',
  'wrong-chain': 'was on another chain than this execution takes',
};

/** The reason of `record`'s status; `confirming` is the watcher's word on a transfer still short of its confirmations. */
export function statusReason(record: ExecutionRecord, confirming?: Confirming): StatusReason {
  switch (record.status) {
    case 'PREPARED': {
      const target = record.depositTarget;
      const minimum = target ? ` of at least ${target.minAmount} base units of ${target.asset} to ${target.address}` : '';
      if (confirming)
        return {
          code: 'deposit-confirming',
          message: `Your deposit is in block ${confirming.blockNumber}, ${confirming.seen} of ${confirming.needed} confirmations deep. The execution takes it once it is ${confirming.needed} deep.`,
          until: record.expiresAt,
          confirmations: confirming,
        };
      const refused = [...record.refusedDeposits].reverse().find((r) => MENDABLE.includes(r.reason));
      if (refused)
        return {
          code: 'deposit-refused',
          message: `A transfer (${refused.txHash}) ${REFUSAL_WORDS[refused.reason]}: it is owed back. Still waiting for a deposit${minimum} until ${record.expiresAt}.`,
          until: record.expiresAt,
        };
      const then = record.signedPayload
        ? 'The signature is already in: the execution signs once the deposit arrives.'
        : 'Then the wallet signs.';
      return {
        code: 'awaiting-deposit',
        message: `Waiting for the deposit${minimum} until ${record.expiresAt}. ${then}`,
        until: record.expiresAt,
      };
    }
    case 'OPERATION_PENDING':
      return {
        code: 'awaiting-signature',
        message: `The deposit arrived. Waiting for the wallet's signature${record.signingDeadline ? ` until ${record.signingDeadline}` : ''}; without it the execution expires and the deposit is paid back.`,
        ...(record.signingDeadline === undefined ? {} : { until: record.signingDeadline }),
      };
    case 'SIGNING':
      return { code: 'signed', message: 'The deposit and the signature are in: the execution is signing. Nothing more is needed.' };
    case 'EXPIRED':
      return record.deposit
        ? {
            code: 'expired-unsigned',
            message: 'No signature came before the signing deadline: the execution expired and its deposit is paid back.',
          }
        : {
            code: 'expired-without-deposit',
            message: `No deposit arrived before ${record.expiresAt}: the execution expired. A transfer sent to it now is paid back.`,
          };
    case 'CANCELLED':
      return {
        code: 'cancelled',
        message: record.deposit
          ? "The execution's owner cancelled it after the deposit arrived: the deposit is paid back."
          : "The execution's owner cancelled it. A transfer sent to it now is paid back.",
      };
  }
}

/** What the chain watcher reports of a transfer it has read but not yet signalled. */
export interface PendingTransfer {
  to: string;
  txHash: string;
  blockNumber: number;
  amount: string;
  /** Absent in an older build's state: native. */
  asset?: string;
}

/**
 * The transfer to `record`'s deposit address that the watcher holds short of its confirmations and
 * that would complete the deposit (its asset, at least the minimum), the earliest first; undefined
 * when there is none or the record takes no on-chain deposit.
 */
export function confirmingOf(
  record: ExecutionRecord,
  pending: readonly PendingTransfer[],
  cursor: number,
  needed: number,
): Confirming | undefined {
  const target = record.depositTarget;
  if (!target || record.status !== 'PREPARED') return undefined;
  const address = target.address.toLowerCase();
  const fits = pending
    .filter((t) => t.to.toLowerCase() === address && (t.asset ?? 'native').toLowerCase() === target.asset.toLowerCase())
    .filter((t) => BigInt(t.amount) >= BigInt(target.minAmount))
    .sort((a, b) => a.blockNumber - b.blockNumber);
  const first = fits[0];
  if (!first) return undefined;
  return {
    txHash: first.txHash,
    blockNumber: first.blockNumber,
    seen: Math.max(1, Math.min(needed, cursor - first.blockNumber + 1)),
    needed,
  };
}
