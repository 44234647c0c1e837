import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

const SDK_SCRAPE_MS = 2000;

export interface MetricsServer {
  url: string;
  close(): Promise<void>;
}

/**
 * Serves `GET /metrics` for the worker: its own registry, followed by the Temporal SDK's runtime
 * metrics scraped from `sdkMetricsUrl` (Core's Prometheus exporter, bound on loopback), so that an
 * operator scrapes one endpoint per worker. Metric names do not overlap: the SDK's all start with
 * `temporal_`. If the SDK endpoint does not answer, our own metrics are served alone.
 */
export async function startMetricsServer(options: {
  host: string;
  port: number;
  registry: Registry;
  sdkMetricsUrl?: string;
}): Promise<MetricsServer> {
  const server: Server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found; try /metrics\n');
      return;
    }
    void render(options).then(
      (text) => res.writeHead(200, { 'content-type': options.registry.contentType }).end(text),
      (err) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics failed: ${(err as Error).message}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { address, port } = server.address() as AddressInfo;
  return {
    url: `http://${address.includes(':') ? `[${address}]` : address}:${port}/metrics`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function render(options: { registry: Registry; sdkMetricsUrl?: string }): Promise<string> {
  const own = await options.registry.metrics();
  if (!options.sdkMetricsUrl) return own;
  const sdk = await fetch(options.sdkMetricsUrl, { signal: AbortSignal.timeout(SDK_SCRAPE_MS) })
    .then((r) => (r.ok ? r.text() : ''))
    .catch(() => '');
  return sdk ? `${own.trimEnd()}\n${sdk}` : own;
}
