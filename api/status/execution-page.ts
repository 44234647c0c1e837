import qrcode from 'qrcode-generator';
import { OPEN_REFUND_STATES } from '../../domain/refund-states';
import { FINAL_STATUSES, type ExecutionRecord } from '../../domain/execution-record';
import type { StatusReason } from '../../domain/status-reason';
import type { RefundSummary } from '../executions/refund-summary';
import type { OwnerRefundAnswer } from '../executions/refund-address';
import { markup, trusted, type Html } from '../http/html';
import { documentOf } from '../http/pages';
import { HISTORY_WORDS, HOLD_WORDS, REFUND_REASON_WORDS, REFUND_STATE_WORDS, STATUS_WORDS } from './words';

/** What the execution page shows: the record as GET answers it, and what the deployment says of its chain. */
export interface ExecutionPageView {
  record: ExecutionRecord & {
    statusReason: StatusReason;
    refunds?: { total: number; rows?: RefundSummary[] };
    ownerRefundAddress?: OwnerRefundAnswer;
  };
  /** The block explorer of the deposit's chain (CHAIN_EXPLORERS); absent: no links. */
  explorer?: string;
  /** DEPOSIT_CONFIRMATIONS of the deposit's chain. */
  confirmations?: number;
}

/** A transaction, address or block, linked to the chain's explorer when it has one. */
export function chainLink(explorer: string | undefined, kind: 'tx' | 'address' | 'block', value: string | number): Html {
  const text = String(value);
  return explorer
    ? markup`<a class="mono" href="${`${explorer}/${kind}/${encodeURIComponent(text)}`}" rel="noreferrer">${text}</a>`
    : markup`<code>${text}</code>`;
}

/** The deposit address as a QR code (inline SVG: nothing to load); the address is EIP-55 hex, nothing else reaches the SVG. */
function qrOf(address: string): Html {
  if (!/^0x[0-9a-fA-F]{40}$/.test(address)) return markup``;
  const qr = qrcode(0, 'M');
  qr.addData(address);
  qr.make();
  return markup`<figure class="qr">
    ${trusted(qr.createSvgTag({ scalable: true, margin: 2 }))}
    <figcaption class="note">the deposit address as a QR code</figcaption>
  </figure>`;
}

const time = (iso: string) =>
  markup`<time datetime="${iso}"
    >${iso
      .replace('T', ' ')
      .replace(/\.\d+Z$/, ' UTC')
      .replace(/Z$/, ' UTC')}</time
  >`;

/** Whether nothing on the page can change any more: a final status, and no refund still open. */
export function pageFinal(record: ExecutionPageView['record']): boolean {
  const rows = record.refunds?.rows ?? [];
  return FINAL_STATUSES.includes(record.status) && rows.every((r) => !OPEN_REFUND_STATES.includes(r.state));
}

function timeline({ record, explorer, confirmations }: ExecutionPageView): Html {
  const items: Array<{ at: string; text: Html }> = record.history.map((h) => ({ at: h.at, text: markup`${HISTORY_WORDS[h.status]}` }));
  const d = record.deposit;
  if (d) {
    const at = record.history.find((h) => h.status === 'OPERATION_PENDING' || h.status === 'SIGNING')?.at ?? record.updatedAt;
    const block =
      d.blockNumber === undefined
        ? markup``
        : markup`, block ${chainLink(explorer, 'block', d.blockNumber)}${confirmations === undefined ? '' : `, ${confirmations} of ${confirmations} confirmations`}`;
    items.push({
      at,
      text: markup`Deposit seen: ${chainLink(explorer, 'tx', d.txHash)}${block}${d.amount ? markup`, ${d.amount} base units` : ''}`,
    });
  }
  const c = record.statusReason.confirmations;
  if (c)
    items.push({
      at: record.updatedAt,
      text: markup`Deposit confirming: ${chainLink(explorer, 'tx', c.txHash)} in block ${chainLink(explorer, 'block', c.blockNumber)}, <strong data-confirmations="${c.seen}/${c.needed}">${c.seen} of ${c.needed}</strong> confirmations`,
    });
  if (record.signedPayload) items.push({ at: record.signedPayload.submittedAt, text: markup`Signature received` });
  items.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
  return markup`<ol class="timeline">
    ${items.map((i) => markup`<li>${time(i.at)}: ${i.text}</li>`)}
  </ol>`;
}

function target({ record, explorer }: ExecutionPageView): Html {
  const t = record.depositTarget;
  if (!t) return markup``;
  const open = record.status === 'PREPARED';
  return markup`<h2>Where the deposit goes</h2>
    <dl>
      <dt>Address</dt>
      <dd>${chainLink(explorer, 'address', t.address)}</dd>
      <dt>Chain</dt>
      <dd>${t.chain}</dd>
      <dt>Asset</dt>
      <dd>${t.asset === 'native' ? "the chain's coin" : t.asset}</dd>
      <dt>Minimum</dt>
      <dd>${t.minAmount} base units</dd>
      <dt>Deadline</dt>
      <dd>${time(record.expiresAt)}${open ? markup` (<span data-countdown="${record.expiresAt}">counting</span>)` : ''}</dd>
      ${
        t.refundAddress
          ? markup`<dt>Refunds go to</dt>
              <dd>${chainLink(explorer, 'address', t.refundAddress)}</dd>`
          : ''
      }
      ${
        record.ownerRefundAddress
          ? markup`<dt>Your refunds go to</dt>
              <dd data-owner-refund="${record.ownerRefundAddress.refundAddress}">${chainLink(explorer, 'address', record.ownerRefundAddress.refundAddress)}, set by the owner at ${time(record.ownerRefundAddress.setAt)}: the deposit's refund and its payer's other transfers</dd>`
          : ''
      }
    </dl>
    ${open ? qrOf(t.address) : ''}`;
}

function refunds({ record, explorer }: ExecutionPageView): Html {
  const rows = record.refunds?.rows ?? [];
  if (rows.length === 0) return markup``;
  return markup`<h2>Transfers owed back</h2>
    <table>
      <caption class="note">
        ${record.refunds!.total} in all${record.refunds!.total > rows.length ? `, the first ${rows.length} shown` : ''}
      </caption>
      <thead>
        <tr>
          <th scope="col">Transfer</th>
          <th scope="col">Amount</th>
          <th scope="col">Why</th>
          <th scope="col">State</th>
          <th scope="col">Refund</th>
        </tr>
      </thead>
      <tbody>
        ${rows.map(
          (r) =>
            markup`<tr data-refund="${r.id}" data-state="${r.state}">
              <td>${chainLink(explorer, 'tx', r.txHash)}</td>
              <td>${r.amount ?? '?'}${r.asset && r.asset !== 'native' ? markup` <span class="mono">${r.asset}</span>` : ''}</td>
              <td>${REFUND_REASON_WORDS[r.reason] ?? r.reason}</td>
              <td>${REFUND_STATE_WORDS[r.state]}${r.holdReason ? markup`: ${HOLD_WORDS[r.holdReason]}` : ''}</td>
              <td>
                ${r.refundTxHash ? markup`<span data-refund-tx="${r.refundTxHash}">${chainLink(explorer, 'tx', r.refundTxHash)}</span>` : '—'}
              </td>
            </tr>`,
        )}
      </tbody>
    </table>`;
}

/** The whole execution page. */
export function executionPage(view: ExecutionPageView, eventsUrl: string): string {
  const { record } = view;
  const main = markup`<h1>Execution <span class="mono">${record.executionId}</span></h1>
    <p class="note">wallet <span class="mono">${record.wallet}</span></p>
    <p class="status" data-status="${record.status}">${STATUS_WORDS[record.status]}</p>
    <p class="reason" role="status" aria-live="polite" data-reason="${record.statusReason.code}">${record.statusReason.message}</p>
    ${target(view)}
    <h2>What happened</h2>
    ${timeline(view)} ${refunds(view)}
    <p class="note">Updated ${time(record.updatedAt)}. This page follows the execution as it changes.</p>`;
  const final = pageFinal(record);
  return documentOf(`Execution ${record.executionId}: ${STATUS_WORDS[record.status]}`, main, {
    final: String(final),
    confirming: String(record.status === 'PREPARED' && record.depositTarget !== undefined),
    events: final ? undefined : eventsUrl,
  });
}
