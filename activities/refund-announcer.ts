import { Context } from '@temporalio/activity';
import { WorkflowExecutionAlreadyStartedError, WorkflowIdReusePolicy } from '@temporalio/client';
import type { WebhookEndpoint } from '../config/config';
import type { ExecutionActivities } from '../contracts/activities';
import {
  REFUND_WEBHOOK_WORKFLOW_TYPE,
  refundHeldWebhookWorkflowId,
  refundPaidWebhookWorkflowId,
  refundWebhookWorkflowId,
} from '../contracts/temporal';
import { refundDelivery, refundHeldDelivery, refundPaidDelivery, type WebhookDelivery } from '../contracts/webhooks';
import type { RefundLedger } from '../db/refund-ledger';

export interface RefundAnnouncerDeps {
  /** The refunds ledger whose unannounced row changes are handed to their webhooks. */
  refunds?: RefundLedger;
  /** Read on every sweep: without an endpoint nothing is announced. */
  webhooks?: () => readonly WebhookEndpoint[];
}

/** The refunds ledger's outbox sweep: each row change not yet announced goes to its webhook's delivery workflow. */
export function createRefundAnnouncerActivities(deps: RefundAnnouncerDeps): Pick<ExecutionActivities, 'announceRefunds'> {
  return {
    async announceRefunds(): Promise<{ announced: number }> {
      if ((deps.webhooks?.() ?? []).length === 0 || !deps.refunds) return { announced: 0 };
      const rows = await deps.refunds.unannounced(100);
      const { client, info } = Context.current();
      // The row's latest change only: a receiver that was never told a row was due is not told it
      // was voided; one told it was due, then voided and due again before a sweep, hears `due` again.
      const announce = (row: (typeof rows)[number]) =>
        row.state === 'due' ? row.event % 2 === 1 : row.state === 'void' && row.event % 2 === 0 && row.announcedEvents > 0;
      /** Hands one delivery to its workflow; one started by an earlier sweep that failed before marking it is announced all the same. */
      const hand = async (workflowId: string, delivery: WebhookDelivery) => {
        try {
          await client.workflow.start(REFUND_WEBHOOK_WORKFLOW_TYPE, {
            workflowId,
            taskQueue: info.taskQueue,
            args: [delivery],
            workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
          });
        } catch (err) {
          if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
        }
      };
      // A row settled before its sweep owes nothing any more: marked, not announced.
      for (const row of rows) if (announce(row)) await hand(refundWebhookWorkflowId(row.id, row.event), refundDelivery(row, row.event));
      await deps.refunds.markAnnounced(rows);
      // Paid rows: one refund.paid each, whoever recorded the payment.
      const paid = await deps.refunds.unannouncedPaid(100);
      for (const row of paid) await hand(refundPaidWebhookWorkflowId(row.id), refundPaidDelivery(row));
      await deps.refunds.markPaidAnnounced(paid.map((r) => r.id));
      // Held rows: one refund.held per row and reason, a person now decides.
      const held = await deps.refunds.unannouncedHeld(100);
      const now = new Date();
      for (const row of held) await hand(refundHeldWebhookWorkflowId(row.id, row.holdReason!), refundHeldDelivery(row, now));
      await deps.refunds.markHeldAnnounced(held);
      return { announced: rows.filter(announce).length + paid.length + held.length };
    },
  };
}
