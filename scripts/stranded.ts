import { parseArgs } from 'node:util';
import { withTemporalClient } from './lib/with-temporal-client';
import { STRANDED_ATTEMPT, runningWorkflowIds, strandedRuns } from './lib/stranded-runs';

const USAGE = `usage: npm run --silent stranded -- [--query VISIBILITY_QUERY]

Lists the running workflows (all, or those the query selects) whose pending workflow task is at
attempt ${STRANDED_ATTEMPT} or more: one JSON line each. Exits 1 when it lists any, 0 when none.`;

/** `npm run stranded`: the executions (and batches) that cannot proceed, for the alert in docs/operations.md. */
async function main() {
  const { values } = parseArgs({ options: { query: { type: 'string' }, help: { type: 'boolean' } } });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  await withTemporalClient(async (client) => {
    const stranded = await strandedRuns(client, await runningWorkflowIds(client, values.query));
    for (const run of stranded) console.log(JSON.stringify(run));
    process.exitCode = stranded.length > 0 ? 1 : 0;
  });
}

main().catch((err) => {
  console.error('stranded failed:', (err as Error).message);
  process.exit(2);
});
