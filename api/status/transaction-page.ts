import type { DepositEntry } from '../deposits/routes';
import type { TransactionProgress } from '../temporal/chain-progress';
import { markup } from '../http/html';
import { documentOf } from '../http/pages';
import { chainLink } from './execution-page';
import { HOLD_WORDS, REFUND_REASON_WORDS, REFUND_STATE_WORDS, STATUS_WORDS } from './words';

/** What the transaction page shows: the transfers the service knows of, or where the chain watcher stands. */
export interface TransactionPageView {
  chain: string;
  txHash: string;
  entries: readonly DepositEntry[];
  /** Asked only when no entry is known. */
  progress?: TransactionProgress;
  explorer?: string;
}

/** Why no transfer is known, in words, and whether asking again may change that. */
function notKnown(view: TransactionPageView): { text: string; code: string; waiting: boolean; confirming: boolean } {
  const p = view.progress ?? { kind: 'unknown' };
  switch (p.kind) {
    case 'not-reached':
      return {
        code: 'DEPOSIT_NOT_REACHED',
        text: `The service has read the chain up to block ${p.seenUpTo}; your transaction is in block ${p.blockNumber}. It is counted once the service reaches it and it is ${p.needed} blocks deep.`,
        waiting: true,
        confirming: true,
      };
    case 'confirming':
      return {
        code: 'DEPOSIT_NOT_REACHED',
        text: `Your transaction is in block ${p.blockNumber}, ${p.seen} of ${p.needed} confirmations deep (the service has read up to block ${p.seenUpTo}). It is counted once it is ${p.needed} deep.`,
        waiting: true,
        confirming: true,
      };
    case 'settling':
      return {
        code: 'DEPOSIT_NOT_REACHED',
        text: `The service has read block ${p.blockNumber}, your transaction's, and is still counting it. This page asks again every few seconds.`,
        waiting: true,
        confirming: false,
      };
    case 'past':
      return {
        code: 'NOT_A_DEPOSIT',
        text: `The service has counted block ${p.blockNumber} and this transaction paid no deposit address of ours.`,
        waiting: false,
        confirming: false,
      };
    case 'unknown':
      return {
        code: 'NOT_FOUND',
        text: 'The service knows nothing of this transaction yet: it may not be mined, or it is on another chain. This page asks again every few seconds.',
        waiting: true,
        confirming: false,
      };
  }
}

function entryItem(e: DepositEntry, explorer?: string) {
  const execution = `/status/${encodeURIComponent(e.wallet)}/${encodeURIComponent(e.executionId)}`;
  const status = e.status ? STATUS_WORDS[e.status] : 'status not known yet';
  const r = e.refund;
  const outcome =
    e.outcome === 'taken'
      ? markup`taken as the deposit of execution <a href="${execution}">${e.executionId}</a> (${status})`
      : markup`owed back by execution <a href="${execution}">${e.executionId}</a> (${status}): ${REFUND_REASON_WORDS[r!.reason] ?? r!.reason};
          ${REFUND_STATE_WORDS[r!.state]}${r!.holdReason ? markup`: ${HOLD_WORDS[r!.holdReason]}` : ''}${r!.refundTxHash ? markup`; refund ${chainLink(explorer, 'tx', r!.refundTxHash)}` : ''}`;
  return markup`<li data-outcome="${e.outcome}">
    transfer
    ${e.transferIndex}${e.amount ? `, ${e.amount} base units` : ''}${e.asset && e.asset !== 'native' ? markup` of <span class="mono">${e.asset}</span>` : ''}:
    ${outcome}
  </li>`;
}

/** The whole transaction page, and its HTTP status (404 while no transfer of it is known). */
export function transactionPage(view: TransactionPageView): { status: number; body: string } {
  const head = markup`<h1>Transaction</h1>
    <p><span class="mono">${chainLink(view.explorer, 'tx', view.txHash)}</span> on <span class="mono">${view.chain}</span></p>`;
  if (view.entries.length > 0) {
    const open = view.entries.some((e) => e.outcome === 'owed' && ['due', 'held', 'paying'].includes(e.refund!.state));
    const main = markup`${head}
      <p class="reason" role="status" aria-live="polite" data-reason="KNOWN">
        The service knows ${view.entries.length} transfer${view.entries.length > 1 ? 's' : ''} of this transaction:
      </p>
      <ul>
        ${view.entries.map((e) => entryItem(e, view.explorer))}
      </ul>`;
    return { status: 200, body: documentOf('Transaction: what became of it', main, { final: String(!open), confirming: 'false' }) };
  }
  const why = notKnown(view);
  const main = markup`${head}
    <p class="reason" role="status" aria-live="polite" data-reason="${why.code}">${why.text}</p>`;
  return {
    status: 404,
    body: documentOf('Transaction: not known yet', main, { final: String(!why.waiting), confirming: String(why.confirming) }),
  };
}
