import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { loadConfig } from '../config/config';
import { temporalConnectionOptions } from '../config/temporal-connection';
import { cancelExecutionUpdate } from '../contracts/temporal';
import { openDatabase } from '../db/database';
import { ExecutionStore } from '../db/execution-store';

const USAGE = `usage: npm run --silent drain -- [--cancel]

Lists the executions that wait for a signature with no signing deadline (OPERATION_PENDING, started
on a build from before SIGNING_DEADLINE_S) whose record has not changed for SIGNING_DEADLINE_S: one
JSON line each. With --cancel, cancels each as an operator (cancelExecution, requestedBy "drain"):
it becomes CANCELLED and its deposit is owed back, as any cancelled execution's. Its run must still
have a worker of its build. Exits 1 when a cancel failed.`;

/**
 * `npm run drain`: the open executions that would otherwise wait for ever, and take a place of the
 * service's capacity meanwhile (docs/decisions/0082).
 */
async function main() {
  const { values } = parseArgs({ options: { cancel: { type: 'boolean' }, help: { type: 'boolean' } } });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const config = loadConfig();
  const database = await openDatabase(config.database);
  const connection = await Connection.connect(temporalConnectionOptions(config, config.temporal.address ?? '127.0.0.1:7233'));
  try {
    const client = new Client({ connection, namespace: config.temporal.namespace });
    const before = new Date(Date.now() - config.signingDeadlineSeconds * 1000).toISOString();
    const found = await new ExecutionStore(database).unsignedWithoutDeadline(before);
    let failed = 0;
    for (const [workflowId, record] of found) {
      const line: Record<string, unknown> = { workflowId, status: record.status, updatedAt: record.updatedAt };
      if (values.cancel) {
        try {
          const after = await client.workflow
            .getHandle(workflowId)
            .executeUpdate(cancelExecutionUpdate, { args: [{ requestedBy: 'drain' }] });
          line.cancelled = after.status === 'CANCELLED';
        } catch (err) {
          failed++;
          line.error = (err as Error).message;
        }
      }
      console.log(JSON.stringify(line));
    }
    process.exitCode = failed > 0 ? 1 : 0;
  } finally {
    await connection.close();
    await database.close();
  }
}

main().catch((err) => {
  console.error('drain failed:', (err as Error).message);
  process.exit(2);
});
