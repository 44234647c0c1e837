import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { withTemporalClient } from './lib/with-temporal-client';
import { WHITELIST_REPAIR_WORKFLOW_TYPE, whitelistRepairWorkflowId, type WhitelistRepairResult } from '../contracts/temporal';

const USAGE = `usage: npm run --silent repair

Runs one anti-entropy pass over the storage nodes now (a whitelistRepairWorkflow on the service's
task queue, run by its workers): every entry's replicas compared and the missing changes copied,
tombstones included. Prints the pass's result as one JSON line. Exits 0 when every node answered,
1 when some did not (their part waits for the next pass), 2 on an error.`;

/** `npm run repair`: refill a node now (after replacing its disk, after adding a node) instead of at the next scheduled pass. */
async function main() {
  const { values } = parseArgs({ options: { help: { type: 'boolean' } } });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  await withTemporalClient(async (client, config) => {
    const result: WhitelistRepairResult = await client.workflow.execute(WHITELIST_REPAIR_WORKFLOW_TYPE, {
      workflowId: whitelistRepairWorkflowId(config.temporal.taskQueue, randomUUID()),
      taskQueue: config.temporal.taskQueue,
      args: [],
    });
    console.log(JSON.stringify(result));
    process.exitCode = result.unreachable.length > 0 ? 1 : 0;
  });
}

main().catch((err) => {
  console.error('repair failed:', (err as Error).message);
  process.exit(2);
});
