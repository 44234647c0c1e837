import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { settledHistoryCost, type HistoryCost } from './cases/history-cost';
import { runSubmitCase } from './cases/submit';
import { JsonClient } from './http';
import { startBenchStack } from './stack';
import { summarise, type Summary } from './stats';

const USAGE = `npm run bench:close [-- --submits N] [--concurrency C]
Runs case 1 (submit through the API, and the direct Update) twice in one run, on a fresh stack
each: with executions that stay open 7 days after their final status (EXECUTION_LINGER_S=604800,
the setting before executions closed) and with executions that close (0, the default); prints both
side by side, with the history of one execution prepare → deposit → SIGNING.`;

interface Side {
  lingerSeconds: number;
  api: Summary;
  direct: Summary;
  history: HistoryCost;
  closed: boolean;
}

async function measure(lingerSeconds: number, submits: number, concurrency: number): Promise<Side> {
  const stack = await startBenchStack({ env: { EXECUTION_LINGER_S: String(lingerSeconds) }, log: (l) => console.log(`  ${l}`) });
  const http = new JsonClient(64);
  const connection = await Connection.connect({ address: stack.temporalAddress });
  try {
    const client = new Client({ connection, namespace: 'default' });
    const runs = await runSubmitCase(stack, http, client, concurrency, submits);
    const history = await settledHistoryCost(client, runs.sampleWorkflowId);
    const closed = (await client.workflow.getHandle(runs.sampleWorkflowId).describe()).status.name !== 'RUNNING';
    return {
      lingerSeconds,
      api: summarise(runs.api.latenciesMs, runs.api.wallMs),
      direct: summarise(runs.direct.latenciesMs, runs.direct.wallMs),
      history,
      closed,
    };
  } finally {
    await connection.close();
    http.close();
    await stack.stop();
  }
}

async function main() {
  const { values } = parseArgs({
    options: { submits: { type: 'string', default: '120' }, concurrency: { type: 'string', default: '10' }, help: { type: 'boolean' } },
  });
  if (values.help) return console.log(USAGE);
  const submits = Number(values.submits);
  const concurrency = Number(values.concurrency);
  const sides: Side[] = [];
  for (const linger of [604_800, 0]) {
    console.log(`EXECUTION_LINGER_S=${linger}`);
    sides.push(await measure(linger, submits, concurrency));
  }
  const rows = sides.map((s) =>
    [
      s.lingerSeconds === 0 ? 'close at the final status (0)' : `stay open ${s.lingerSeconds} s`,
      `${s.api.opsPerSec} / ${s.api.p50Ms} / ${s.api.p99Ms}`,
      `${s.direct.opsPerSec} / ${s.direct.p50Ms} / ${s.direct.p99Ms}`,
      `${s.history.events} events, ${s.history.workflowTasks} workflow tasks, ${s.history.activityTasks} activity tasks`,
      s.closed ? 'closed' : 'running',
    ].join(' | '),
  );
  console.log(
    [
      `\nsubmit, ${concurrency} clients, ${submits} per side, ${new Date().toISOString()}`,
      '| executions | API req/s / p50 ms / p99 ms | direct Update /s / p50 / p99 | one execution, prepare → SIGNING | after |',
      '|---|---|---|---|---|',
      ...rows.map((r) => `| ${r} |`),
    ].join('\n'),
  );
}

main().catch((err) => {
  console.error('bench:close failed:', err);
  process.exit(1);
});
