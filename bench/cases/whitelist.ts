import { randomBytes, randomUUID } from 'node:crypto';
import { WithStartWorkflowOperation, type Client } from '@temporalio/client';
import { toChecksumAddress } from '../../domain/eoa';
import { groupByOwner, type OwnerGroups } from '../../domain/rendezvous';
import { ownerKey, type WhitelistChange } from '../../domain/whitelist-messages';
import { ROUTES } from '../../contracts/storage-node-protocol';
import { nodeOf, signRequest, type NodeKeys } from '../../lib/node-request-auth';
import type { JsonClient } from '../http';
import { closedLoop, type LoadResult } from '../load';
import { cpuMs } from '../proc';
import type { BenchStack } from '../stack';
import { emptyAnswerUpdate } from '../floor/workflows';
import { round } from '../stats';

// Case 3: whitelist batches of fresh entries through the API (a workflow: precheck and one apply
// per owning node as local activities), against the same changes posted straight to their owning
// nodes in parallel with a fresh batchId: the fan-out without Temporal (grouped by owner before
// the clock starts, so that only the requests are timed). Two more sides measure floors: a
// workflow that does nothing, started by update-with-start from this process; and the same whose
// Update waits for one local activity that does nothing (the least a batch can be while its
// precheck runs inside the workflow). One call at a time, rotating the order of the four, so that
// all see the same machine.

export interface WhitelistRuns {
  api: LoadResult;
  /** The same batches through the API that keeps one copy of each entry (STORAGE_REPLICAS=1). */
  apiOneCopy: LoadResult;
  direct: LoadResult;
  /** The empty workflow (bench/floor) by update-with-start: what one workflow costs on this server. */
  empty: LoadResult;
  /** The empty workflow whose Update waits for one no-op local activity, by update-with-start: the least a batch can be. */
  oneLocalActivity: LoadResult;
  /** The API's batches (X-Batch-Id) and their HTTP latencies, for the history timeline. */
  apiBatches: Array<{ batchId: string; httpMs: number }>;
  /** The empty workflows (update-with-start) and their latencies, for the floor's history timeline. */
  emptyRuns: Array<{ workflowId: string; clientMs: number }>;
  /** CPU time the API process used per batch (summed over the API batches only). */
  apiCpuMsPerBatch: number;
}

export function freshChanges(size: number): WhitelistChange[] {
  return Array.from({ length: size }, (_, i) => ({
    op_type: 'add_entry' as const,
    kind: i % 2 === 0 ? ('developer' as const) : ('user' as const),
    entry: toChecksumAddress('0x' + randomBytes(20).toString('hex')),
  }));
}

/** Posts a batch through the API; resolves with its batch id. */
export async function viaApi(stack: BenchStack, http: JsonClient, changes: WhitelistChange[], apiUrl = stack.apiUrl): Promise<string> {
  const answer = await http.post(`${apiUrl}/chain/whitelists/`, changes, { authorization: `Bearer ${stack.token}` });
  if (answer.status !== 200 || !Array.isArray(answer.body) || answer.body.length !== changes.length) {
    throw new Error(`whitelist batch: HTTP ${answer.status} ${JSON.stringify(answer.body).slice(0, 200)}`);
  }
  return String(answer.headers['x-batch-id']);
}

/**
 * Posts each node its share, in parallel, signed as the worker signs (so the direct side pays the
 * same HMAC); the grouping was done before the clock started.
 */
export async function direct(http: JsonClient, groups: OwnerGroups<WhitelistChange>, keys: NodeKeys): Promise<void> {
  const batchId = randomUUID();
  await Promise.all(
    [...groups].map(async ([node, items]) => {
      const payload = { batchId, position: Date.now(), changes: items.map((i) => i.item) };
      // JsonClient sends JSON.stringify(payload): the same bytes as signed here.
      const signature = signRequest(keys, { method: 'POST', node: nodeOf(node), target: ROUTES.apply, body: JSON.stringify(payload) });
      const answer = await http.post(`${node}${ROUTES.apply}`, payload, signature);
      if (answer.status !== 200 || answer.body?.results?.length !== items.length) throw new Error(`${node}: HTTP ${answer.status}`);
    }),
  );
}

/**
 * Starts a floor workflow (by default the empty one) by update-with-start and waits for its
 * answer; resolves with its workflow id.
 */
export async function emptyWorkflow(
  stack: BenchStack,
  client: Client,
  workflowType: 'emptyBatchWorkflow' | 'oneLocalActivityWorkflow' = 'emptyBatchWorkflow',
): Promise<string> {
  const workflowId = `bench-floor:${randomUUID()}`;
  const startWorkflowOperation = new WithStartWorkflowOperation(workflowType, {
    workflowId,
    taskQueue: stack.floorTaskQueue,
    workflowIdConflictPolicy: 'FAIL',
  });
  await client.workflow.executeUpdateWithStart(emptyAnswerUpdate, { startWorkflowOperation });
  return workflowId;
}

const SIDES = ['api', 'apiOneCopy', 'direct', 'empty', 'oneLocalActivity'] as const;
type SideName = (typeof SIDES)[number];
/** Round i runs the sides starting from the (i mod 5)-th, so that each follows each as often. */
const orderOf = (round: number): SideName[] => SIDES.map((_, k) => SIDES[(round + k) % SIDES.length]);

/** `count` batches of `size` changes each way (and `count` empty workflows), one at a time, interleaved. */
export async function runWhitelistCase(
  stack: BenchStack,
  http: JsonClient,
  client: Client,
  size: number,
  count: number,
): Promise<WhitelistRuns> {
  const apiChanges = Array.from({ length: count }, () => freshChanges(size));
  const oneCopyChanges = Array.from({ length: count }, () => freshChanges(size));
  // The direct side is the limit: only its requests are timed, not the routing.
  const directGroups = Array.from({ length: count }, () => groupByOwner(freshChanges(size), ownerKey, stack.nodes));
  http.dropIdle();
  const api: number[] = [];
  const apiOneCopy: number[] = [];
  const dir: number[] = [];
  const empty: number[] = [];
  const oneLocalActivity: number[] = [];
  const apiBatches: WhitelistRuns['apiBatches'] = [];
  const emptyRuns: WhitelistRuns['emptyRuns'] = [];
  const errors = { api: 0, apiOneCopy: 0, direct: 0, empty: 0, oneLocalActivity: 0, first: undefined as string | undefined };
  const wall = { api: 0, apiOneCopy: 0, direct: 0, empty: 0, oneLocalActivity: 0 };
  let apiCpu = 0;
  for (let i = 0; i < count; i++) {
    // Rotate which goes first, so that none always runs right after another's I/O.
    for (const side of orderOf(i)) {
      const t0 = performance.now();
      try {
        if (side === 'api') {
          const cpuBefore = cpuMs(stack.api.pid);
          const batchId = await viaApi(stack, http, apiChanges[i]);
          apiCpu += cpuMs(stack.api.pid) - cpuBefore;
          api.push(performance.now() - t0);
          apiBatches.push({ batchId, httpMs: performance.now() - t0 });
        } else if (side === 'apiOneCopy') {
          await viaApi(stack, http, oneCopyChanges[i], stack.apiOneCopyUrl);
          apiOneCopy.push(performance.now() - t0);
        } else if (side === 'direct') {
          await direct(http, directGroups[i], stack.nodeKeys);
          dir.push(performance.now() - t0);
        } else if (side === 'empty') {
          const workflowId = await emptyWorkflow(stack, client);
          const clientMs = performance.now() - t0;
          empty.push(clientMs);
          emptyRuns.push({ workflowId, clientMs });
        } else {
          await emptyWorkflow(stack, client, 'oneLocalActivityWorkflow');
          oneLocalActivity.push(performance.now() - t0);
        }
      } catch (err) {
        errors[side]++;
        errors.first ??= (err as Error).message;
      }
      wall[side] += performance.now() - t0;
    }
  }
  return {
    api: { latenciesMs: api, wallMs: wall.api, errors: errors.api, firstError: errors.first },
    apiOneCopy: { latenciesMs: apiOneCopy, wallMs: wall.apiOneCopy, errors: errors.apiOneCopy, firstError: errors.first },
    direct: { latenciesMs: dir, wallMs: wall.direct, errors: errors.direct, firstError: errors.first },
    empty: { latenciesMs: empty, wallMs: wall.empty, errors: errors.empty, firstError: errors.first },
    oneLocalActivity: {
      latenciesMs: oneLocalActivity,
      wallMs: wall.oneLocalActivity,
      errors: errors.oneLocalActivity,
      firstError: errors.first,
    },
    apiBatches,
    emptyRuns,
    apiCpuMsPerBatch: round(apiCpu / Math.max(1, count), 2),
  };
}

/** Throughput: `count` batches of `size` through the API from `concurrency` clients at once. */
export function runWhitelistThroughput(
  stack: BenchStack,
  http: JsonClient,
  size: number,
  count: number,
  concurrency: number,
): Promise<LoadResult> {
  const batches = Array.from({ length: count }, () => freshChanges(size));
  http.dropIdle();
  return closedLoop(count, concurrency, async (i) => void (await viaApi(stack, http, batches[i])));
}
