import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';

/**
 * IndexedValueType values of temporal/api/enums/v1/common.proto for the types temporal-dev.yaml
 * may name (the numbers are the wire format; @temporalio/proto is a dev dependency only).
 */
const INDEXED_VALUE_TYPES: Record<string, number> = { Text: 1, Keyword: 2, Int: 3, Double: 4, Bool: 5, Datetime: 6, KeywordList: 7 };

const GRPC_ALREADY_EXISTS = 6;
const GRPC_NOT_FOUND = 5;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Registers `namespace` with `retentionDays` (or sets the retention of an existing one) and the
 * custom search attributes (name → Keyword, …), then waits until the frontend lists them. A new
 * server creates no namespace, and the server's namespace cache takes seconds to see a new one,
 * so attribute registration is retried on NotFound.
 */
export async function ensureNamespace(
  address: string,
  namespace: string,
  retentionDays: number,
  searchAttributes: Record<string, string>,
  timeoutMs = 60_000,
): Promise<'created' | 'updated' | 'unchanged'> {
  const connection = await Connection.connect({ address });
  const deadline = Date.now() + timeoutMs;
  const retentionSeconds = retentionDays * 86_400;
  const retention = msToTs(retentionSeconds * 1000);
  try {
    let outcome: 'created' | 'updated' | 'unchanged' = 'created';
    try {
      await connection.workflowService.registerNamespace({
        namespace,
        workflowExecutionRetentionPeriod: retention,
        description: 'intent-service',
      });
    } catch (err) {
      if ((err as { code?: number }).code !== GRPC_ALREADY_EXISTS) throw err;
      const described = await connection.workflowService.describeNamespace({ namespace });
      const current = Number(described.config?.workflowExecutionRetentionTtl?.seconds ?? 0);
      if (current === retentionSeconds) outcome = 'unchanged';
      else {
        await connection.workflowService.updateNamespace({ namespace, config: { workflowExecutionRetentionTtl: retention } });
        outcome = 'updated';
      }
    }
    const wanted = Object.fromEntries(
      Object.entries(searchAttributes).map(([name, type]) => {
        const value = INDEXED_VALUE_TYPES[type];
        if (value === undefined) throw new Error(`search attribute ${name}: unknown type ${type}`);
        return [name, value];
      }),
    );
    for (;;) {
      try {
        const listed = await connection.operatorService.listSearchAttributes({ namespace });
        const missing = Object.fromEntries(Object.entries(wanted).filter(([name]) => !(name in (listed.customAttributes ?? {}))));
        if (Object.keys(missing).length === 0) break;
        await connection.operatorService.addSearchAttributes({ namespace, searchAttributes: missing });
      } catch (err) {
        if ((err as { code?: number }).code !== GRPC_NOT_FOUND || Date.now() > deadline) throw err;
        await sleep(500);
      }
    }
    // The frontend's own namespace cache, refreshed on a timer: wait until it describes the namespace.
    for (;;) {
      try {
        await connection.workflowService.describeNamespace({ namespace });
        break;
      } catch (err) {
        if (Date.now() > deadline) throw err;
        await sleep(500);
      }
    }
    return outcome;
  } finally {
    await connection.close();
  }
}
