import { freePort } from '../config/free-port';
import { Runtime, type LogLevel } from '@temporalio/worker';
import type { Logger } from 'pino';
import { pinoSdkLogger } from './sdk-logger';

/**
 * Installs the Temporal SDK runtime (once per process, before any worker): the SDK's log goes to
 * `logger` at `sdkLogLevel`, and Core's own metrics (polls, task latencies, slots, sticky cache…)
 * to a Prometheus exporter on a loopback port, whose URL is returned so the worker's metrics
 * endpoint can append them.
 */
export async function installRuntime(logger: Logger, sdkLogLevel: LogLevel): Promise<{ sdkMetricsUrl: string }> {
  // Core's exporter cannot tell us which port 0 got, so it is given one.
  const bindAddress = `127.0.0.1:${await freePort()}`;
  Runtime.install({
    logger: pinoSdkLogger(logger.child({ component: 'temporal-sdk' }, { level: sdkLogLevel.toLowerCase() })),
    telemetryOptions: {
      metrics: { prometheus: { bindAddress, countersTotalSuffix: true, useSecondsForDurations: true, unitSuffix: true } },
    },
  });
  return { sdkMetricsUrl: `http://${bindAddress}/metrics` };
}
