import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { loadConfig, type Config } from '../config/config';
import { temporalConnectionOptions } from '../config/temporal-connection';
import { openDatabase } from '../db/database';
import { ExecutionStore } from '../db/execution-store';
import { EXECUTION_WORKFLOW_TYPE, getExecutionQuery } from '../contracts/temporal';

const USAGE = `usage: npm run --silent db -- migrate
       npm run --silent db -- repair [--wallet WALLET] [--query VISIBILITY_QUERY]

migrate  applies the read model's migrations (the API and the worker also do it at start-up)
repair   re-projects executions from Temporal into the read model: every execution workflow
         Temporal still has (or those of one wallet, or those a visibility query selects) is
         queried and upserted; a row is only replaced by a newer version, so it is safe to run
         at any time, beside running workers`;

export interface RepairResult {
  seen: number;
  written: number;
  failed: Array<{ workflowId: string; reason: string }>;
}

/** Re-projects the executions a visibility query selects; returns what it did. */
export async function repairReadModel(client: Client, store: ExecutionStore, query: string): Promise<RepairResult> {
  const result: RepairResult = { seen: 0, written: 0, failed: [] };
  for await (const workflow of client.workflow.list({ query })) {
    result.seen++;
    try {
      const record = await client.workflow.getHandle(workflow.workflowId, workflow.runId).query(getExecutionQuery);
      if (await store.upsert(workflow.workflowId, record)) result.written++;
    } catch (err) {
      result.failed.push({ workflowId: workflow.workflowId, reason: (err as Error).message });
    }
  }
  return result;
}

export function repairQuery(options: { wallet?: string; query?: string }): string {
  if (options.query) return options.query;
  const base = `WorkflowType='${EXECUTION_WORKFLOW_TYPE}'`;
  if (!options.wallet) return base;
  if (!/^[A-Za-z0-9._-]{1,128}$/.test(options.wallet)) throw new Error('--wallet is not a wallet id');
  return `${base} AND ExecutionWallet='${options.wallet}'`;
}

async function main(argv: string[]) {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { wallet: { type: 'string' }, query: { type: 'string' }, help: { type: 'boolean' } },
  });
  const command = positionals[0];
  if (values.help || (command !== 'migrate' && command !== 'repair')) {
    console.error(USAGE);
    process.exit(values.help ? 0 : 2);
  }
  const config: Config = loadConfig();
  const database = await openDatabase(config.database);
  try {
    if (command === 'migrate') {
      console.log(`read model at ${database.where} is at the latest migration`);
      return;
    }
    const connection = await Connection.connect(temporalConnectionOptions(config, config.temporal.address ?? '127.0.0.1:7233'));
    try {
      const client = new Client({ connection, namespace: config.temporal.namespace });
      const result = await repairReadModel(client, new ExecutionStore(database), repairQuery(values));
      console.log(JSON.stringify({ database: database.where, ...result, failed: result.failed.length }));
      for (const f of result.failed) console.error(`${f.workflowId}: ${f.reason}`);
      if (result.failed.length > 0) process.exitCode = 1;
    } finally {
      await connection.close();
    }
  } finally {
    await database.close();
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((err) => {
    console.error('db:', (err as Error).message);
    process.exit(1);
  });
}
