import { Gauge, type Registry } from 'prom-client';
import { nodeName } from '../../domain/node-names';
import { getJson } from '../../activities/http-post';
import type { NodeTransport } from '../../activities/node-transport';
import { ROUTES } from '../../contracts/storage-node-protocol';

/** How long one probe of a node's /healthz may take. */
export const PROBE_MS = 2000;

export type NodeHealth = Record<string, 'up' | 'down'>;

/**
 * GETs each node's /healthz in parallel (2 s each), signed like every request to a node: `up` on a
 * 2xx, `down` otherwise (a node that refuses this API's key is down to it).
 */
export async function probeStorageNodes(nodes: readonly string[], transport: NodeTransport): Promise<NodeHealth> {
  const health: NodeHealth = {};
  await Promise.all(
    nodes.map((node) =>
      getJson(`${node}${ROUTES.health}`, { timeoutMs: PROBE_MS, transport }).then(
        ({ status }) => void (health[node] = status >= 200 && status <= 299 ? 'up' : 'down'),
        () => void (health[node] = 'down'),
      ),
    ),
  );
  return health;
}

/**
 * `intent_storage_node_up{node}` (`node-N`): 1 while the node answers its /healthz, 0 when not, probed at
 * each scrape. A node's outage is an alert of its own (batches owned by it answer 408/500 and
 * retry), never a reason to take the API out of a load balancer: see api/operations/routes.ts.
 */
export function registerStorageNodeGauge(registry: Registry, nodes: readonly string[], transport: NodeTransport): void {
  new Gauge({
    name: 'intent_storage_node_up',
    help: 'Whether each storage node answers GET /healthz within 2 s (1 up, 0 down), probed at scrape time',
    labelNames: ['node'] as const,
    registers: [registry],
    async collect() {
      const health = await probeStorageNodes(nodes, transport);
      // Labelled `node-N` (its place in STORAGE_NODES), never by URL (decision 0066).
      for (const node of nodes) this.set({ node: nodeName(nodes, node) }, health[node] === 'up' ? 1 : 0);
    },
  });
}
