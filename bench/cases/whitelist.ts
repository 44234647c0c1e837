import { randomBytes, randomUUID } from 'node:crypto';
import { toChecksumAddress } from '../../domain/eoa';
import { groupByOwner } from '../../domain/rendezvous';
import { ownerKey, type WhitelistChange } from '../../domain/whitelist-messages';
import type { JsonClient } from '../http';
import { closedLoop, type LoadResult } from '../load';
import { cpuMs } from '../proc';
import type { BenchStack } from '../stack';
import { round } from '../stats';

// Case 3: whitelist batches of fresh entries through the API (workflow, precheck activity, one
// apply activity per owning node), against the same changes posted straight to their owning
// nodes in parallel with a fresh batchId: the fan-out without Temporal. One batch at a time,
// alternating API and direct, so both see the same machine.

export interface WhitelistRuns {
  api: LoadResult;
  direct: LoadResult;
  /** The API's batches (X-Batch-Id) and their HTTP latencies, for the history timeline. */
  apiBatches: Array<{ batchId: string; httpMs: number }>;
  /** CPU time the API process used per batch (summed over the API batches only). */
  apiCpuMsPerBatch: number;
}

function freshChanges(size: number): WhitelistChange[] {
  return Array.from({ length: size }, (_, i) => ({
    op_type: 'add_entry' as const,
    kind: i % 2 === 0 ? ('developer' as const) : ('user' as const),
    entry: toChecksumAddress('0x' + randomBytes(20).toString('hex')),
  }));
}

/** Posts a batch through the API; resolves with its batch id. */
async function viaApi(stack: BenchStack, http: JsonClient, changes: WhitelistChange[]): Promise<string> {
  const answer = await http.post(`${stack.apiUrl}/chain/whitelists/`, changes, { authorization: `Bearer ${stack.token}` });
  if (answer.status !== 200 || !Array.isArray(answer.body) || answer.body.length !== changes.length) {
    throw new Error(`whitelist batch: HTTP ${answer.status} ${JSON.stringify(answer.body).slice(0, 200)}`);
  }
  return String(answer.headers['x-batch-id']);
}

async function direct(stack: BenchStack, http: JsonClient, changes: WhitelistChange[]): Promise<void> {
  const groups = groupByOwner(changes, ownerKey, stack.nodes);
  const batchId = randomUUID();
  await Promise.all(
    [...groups].map(async ([node, items]) => {
      const answer = await http.post(`${node}/v1/whitelists/apply`, { batchId, changes: items.map((i) => i.item) });
      if (answer.status !== 200 || answer.body?.results?.length !== items.length) throw new Error(`${node}: HTTP ${answer.status}`);
    }),
  );
}

/** `count` batches of `size` changes each way, one at a time, API and direct interleaved. */
export async function runWhitelistCase(stack: BenchStack, http: JsonClient, size: number, count: number): Promise<WhitelistRuns> {
  const batches = Array.from({ length: 2 * count }, () => freshChanges(size));
  http.dropIdle();
  const api: number[] = [];
  const dir: number[] = [];
  const apiBatches: WhitelistRuns['apiBatches'] = [];
  const errors = { api: 0, direct: 0, first: undefined as string | undefined };
  let apiWall = 0;
  let apiCpu = 0;
  let directWall = 0;
  for (let i = 0; i < count; i++) {
    // Alternate which goes first, so that neither always runs right after the other's I/O.
    const order: Array<'api' | 'direct'> = i % 2 === 0 ? ['api', 'direct'] : ['direct', 'api'];
    for (const side of order) {
      const changes = batches[side === 'api' ? 2 * i : 2 * i + 1];
      const t0 = performance.now();
      try {
        if (side === 'api') {
          const cpuBefore = cpuMs(stack.api.pid);
          const batchId = await viaApi(stack, http, changes);
          apiCpu += cpuMs(stack.api.pid) - cpuBefore;
          api.push(performance.now() - t0);
          apiBatches.push({ batchId, httpMs: performance.now() - t0 });
        } else {
          await direct(stack, http, changes);
          dir.push(performance.now() - t0);
        }
      } catch (err) {
        errors[side]++;
        errors.first ??= (err as Error).message;
      }
      if (side === 'api') apiWall += performance.now() - t0;
      else directWall += performance.now() - t0;
    }
  }
  return {
    api: { latenciesMs: api, wallMs: apiWall, errors: errors.api, firstError: errors.first },
    direct: { latenciesMs: dir, wallMs: directWall, errors: errors.direct, firstError: errors.first },
    apiBatches,
    apiCpuMsPerBatch: round(apiCpu / Math.max(1, count), 2),
  };
}

/** Throughput: `count` batches of `size` through the API from `concurrency` clients at once. */
export function runWhitelistThroughput(stack: BenchStack, http: JsonClient, size: number, count: number, concurrency: number): Promise<LoadResult> {
  const batches = Array.from({ length: count }, () => freshChanges(size));
  http.dropIdle();
  return closedLoop(count, concurrency, async (i) => void (await viaApi(stack, http, batches[i])));
}
