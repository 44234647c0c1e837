import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../contracts/activities';
import type { WhitelistRepairResult } from '../contracts/temporal';
import { WHITELIST_KINDS } from '../domain/whitelist-messages';

const { repairPage, confirmRefilled } = proxyActivities<Activities>({
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
  // Each node's incarnation as every page saw it (undefined: it changed during the pass), and whether it is refilled.
  const incarnations = new Map<string, { incarnation: number | undefined; refilled: boolean }>();
  for (const kind of WHITELIST_KINDS) {
    let after: string | undefined;
    do {
      const page = await repairPage({ kind, limit: PAGE, ...(after === undefined ? {} : { after }) });
      result.entries += page.entries;
      result.repaired += page.repaired;
      for (const node of page.unreachable) if (!result.unreachable.includes(node)) result.unreachable.push(node);
      for (const [node, { incarnation, refilled }] of Object.entries(page.replicas)) {
        const known = incarnations.get(node);
        if (!known) incarnations.set(node, { incarnation, refilled });
        else if (known.incarnation !== incarnation) known.incarnation = undefined;
      }
      after = page.next;
    } while (after !== undefined);
  }
  // A node back with an empty disk counts toward read majorities again only once a pass that heard
  // every node on every page, its incarnation unchanged throughout, has given it what the others hold.
  if (result.unreachable.length === 0) {
    const marks = [...incarnations].flatMap(([node, { incarnation, refilled }]) =>
      incarnation === undefined || refilled ? [] : [{ node, incarnation }],
    );
    if (marks.length > 0) await confirmRefilled(marks);
  }
  return result;
}
