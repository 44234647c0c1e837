import type { Client } from '@temporalio/client';
import { groupByOwner } from '../../domain/rendezvous';
import { ownerKey } from '../../domain/whitelist-messages';
import type { JsonClient } from '../http';
import { closedLoop } from '../load';
import type { BenchStack } from '../stack';
import { round, summarise } from '../stats';
import { direct, emptyWorkflow, freshChanges, viaApi } from './whitelist';

// Case 3 as a curve: batches of each size from 1, 2, 4 and 8 closed-loop clients at once, through
// the API, straight to the nodes, and as the empty workflow (the floor): how throughput (changes/s)
// and latency grow with the work and the concurrency.

export const CURVE_SIZES = [1, 10, 100];
export const CURVE_CLIENTS = [1, 2, 4, 8];
export const CURVE_SIDES = ['api', 'direct', 'empty'] as const;

export interface CurvePoint {
  side: (typeof CURVE_SIDES)[number];
  size: number;
  clients: number;
  /** Changes applied per second of wall time (for the empty workflow: batches/s × size, the floor). */
  changesPerSec: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
}

export async function runCurve(
  stack: BenchStack,
  http: JsonClient,
  client: Client,
  batchesPerPoint: number,
  say: (line: string) => void,
): Promise<CurvePoint[]> {
  const points: CurvePoint[] = [];
  for (const size of CURVE_SIZES) {
    for (const clients of CURVE_CLIENTS) {
      say(`curve: batches of ${size} from ${clients} client(s), ${batchesPerPoint} per side`);
      for (const side of CURVE_SIDES) {
        const changes = Array.from({ length: batchesPerPoint }, () => freshChanges(size));
        const groups = side === 'direct' ? changes.map((c) => groupByOwner(c, ownerKey, stack.nodes)) : [];
        http.dropIdle();
        const run = await closedLoop(batchesPerPoint, clients, async (i) => {
          if (side === 'api') await viaApi(stack, http, changes[i]);
          else if (side === 'direct') await direct(http, groups[i], stack.nodeKeys);
          else await emptyWorkflow(stack, client);
        });
        const s = summarise(run.latenciesMs, run.wallMs);
        points.push({
          side,
          size,
          clients,
          changesPerSec: round(s.opsPerSec * size, 1),
          p50Ms: s.p50Ms,
          p99Ms: s.p99Ms,
          errors: run.errors,
        });
      }
    }
  }
  return points;
}
