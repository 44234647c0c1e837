import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../contracts/activities';
import type { WhitelistRepairResult } from '../contracts/temporal';
import { WHITELIST_KINDS } from '../domain/whitelist-messages';

const { repairPage } = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 5 },
});

/** Entries per page: every node is asked for this many histories at a time. */
const PAGE = 500;

/**
 * One anti-entropy pass (decision 0094): both whitelists, page by page in entry order; each page's
 * histories are merged per entry and written to every replica that lacks part of them, tombstones
 * and reverts included, with their place in the one order. Started every minute by the schedule
 * `whitelist-repair:<task queue>` (one at a time) and on demand by `npm run repair`. A node down
 * is skipped and named in the result; the next pass repairs it.
 */
export async function whitelistRepairWorkflow(): Promise<WhitelistRepairResult> {
  const result: WhitelistRepairResult = { entries: 0, repaired: 0, unreachable: [] };
  for (const kind of WHITELIST_KINDS) {
    let after: string | undefined;
    do {
      const page = await repairPage({ kind, limit: PAGE, ...(after === undefined ? {} : { after }) });
      result.entries += page.entries;
      result.repaired += page.repaired;
      for (const node of page.unreachable) if (!result.unreachable.includes(node)) result.unreachable.push(node);
      after = page.next;
    } while (after !== undefined);
  }
  return result;
}
