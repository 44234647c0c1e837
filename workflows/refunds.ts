import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { ParentClosePolicy, continueAsNew, log, proxyActivities, sleep, startChild } from '@temporalio/workflow';
import type { Activities } from '../contracts/activities';
import { refundAddressWorkflowId, type RefundAddressInput } from '../contracts/temporal';

// Every refund activity reads the ledger and the chain again and writes conditionally, so a retry
// is always safe: retried for ever (a node or read model that is down only delays refunds).
const { refundAddressesToPay, nextRefund, signRefund, broadcastRefund, checkRefund, replaceRefund } = proxyActivities<Activities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' },
});

/** Steps (a look at the chain each) per run before continue-as-new: bounds the history of an address whose refund waits long. */
const STEPS_PER_RUN = 200;

/**
 * The sweep of the refunds ledger (schedule `refund-sweep:<task queue>`, every few seconds): starts
 * the refund workflow of each deposit address with a row to pay, one per address, on its own task
 * queue, and no more than `room` new ones (decision 0089); one already running is left alone, the
 * rest wait for a later sweep. Answers how many it started.
 */
export async function refundSweepWorkflow(): Promise<number> {
  const { chain, addresses, pollIntervalMs, room } = await refundAddressesToPay();
  if (chain === undefined) return 0;
  let started = 0;
  for (const address of addresses) {
    if (started >= room) break;
    try {
      await startChild(refundAddressWorkflow, {
        workflowId: refundAddressWorkflowId(chain, address),
        args: [{ chain, address, pollIntervalMs }],
        parentClosePolicy: ParentClosePolicy.ABANDON,
      });
      started++;
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
  }
  return started;
}

/**
 * The refunds of one deposit address (`refund:<chain>:<address>`, docs/decisions/0081): pays its
 * rows one after another, each only once the nonce of the previous one is mined, and closes when
 * none is left to pay (a row held for a person has no workflow). One workflow id per address is
 * what serialises the address's nonces across workers, without a lock; the ledger's conditional
 * updates make a second run (after a termination, or past retention) find where the first stopped.
 */
export async function refundAddressWorkflow(input: RefundAddressInput): Promise<number> {
  const { chain, address } = input;
  let paid = input.paid ?? 0;
  const poll = Math.max(50, input.pollIntervalMs);
  for (let step = 0; step < STEPS_PER_RUN; step++) {
    const next = await nextRefund({ chain, address });
    if (!next) return paid;
    const row = { chain, address, id: next.id };
    if (next.step === 'sign') {
      const signed = await signRefund(row);
      // Its transfer is not deep enough yet: look again later, less often than at a transaction out.
      if (signed === 'wait') await sleep(10 * poll);
      if (signed !== 'paying') continue;
    }
    await broadcastRefund(row);
    const state = await checkRefund(row);
    if (state === 'mined') {
      paid++;
      continue;
    }
    if (state === 'replace' || state === 'cancel') {
      const replaced = await replaceRefund(row);
      if (replaced === 'signed') continue;
      if (replaced === 'capped') log.warn('refund at its fee cap: waiting for a block that takes it', { id: row.id });
    }
    await sleep(poll);
  }
  return continueAsNew<typeof refundAddressWorkflow>({ ...input, paid });
}
