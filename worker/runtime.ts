import { createServer } from 'node:net';
import { Runtime, type LogLevel } from '@temporalio/worker';
import type { Logger } from 'pino';
import { pinoSdkLogger } from './sdk-logger';

/** A loopback port that was free a moment ago (Core's exporter cannot tell us which port 0 got). */
function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/**
 * Installs the Temporal SDK runtime (once per process, before any worker): the SDK's log goes to
 * `logger` at `sdkLogLevel`, and Core's own metrics (polls, task latencies, slots, sticky cache…)
 * to a Prometheus exporter on a loopback port, whose URL is returned so the worker's metrics
 * endpoint can append them.
 */
export async function installRuntime(logger: Logger, sdkLogLevel: LogLevel): Promise<{ sdkMetricsUrl: string }> {
  const bindAddress = `127.0.0.1:${await freeLoopbackPort()}`;
  Runtime.install({
    logger: pinoSdkLogger(logger.child({ component: 'temporal-sdk' }, { level: sdkLogLevel.toLowerCase() })),
    telemetryOptions: { metrics: { prometheus: { bindAddress, countersTotalSuffix: true, useSecondsForDurations: true, unitSuffix: true } } },
  });
  return { sdkMetricsUrl: `http://${bindAddress}/metrics` };
}
