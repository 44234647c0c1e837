import { freePort } from '../config/free-port';
import { Runtime, type LogLevel } from '@temporalio/worker';
import type { Logger } from 'pino';
import { pinoSdkLogger } from './sdk-logger';
import { coreWedgeListener } from './core-wedge';

/**
 * Installs the Temporal SDK runtime (once per process, before any worker): the SDK's log goes to
 * `logger` at `sdkLogLevel`, and Core's own metrics (polls, task latencies, slots, sticky cache…)
 * to a Prometheus exporter on a loopback port, whose URL is returned so the worker's metrics
 * endpoint can append them. `onCoreWedge` hears the core say it has wedged a run (worker/core-wedge.ts).
 */
export async function installRuntime(
  logger: Logger,
  sdkLogLevel: LogLevel,
  onCoreWedge: (meta: Record<string, unknown> | undefined) => void = () => undefined,
): Promise<{ sdkMetricsUrl: string }> {
  // Core's exporter cannot tell us which port 0 got, so it is given one.
  const bindAddress = `127.0.0.1:${await freePort()}`;
  Runtime.install({
    logger: pinoSdkLogger(
      logger.child({ component: 'temporal-sdk' }, { level: sdkLogLevel.toLowerCase() }),
      coreWedgeListener(onCoreWedge),
    ),
    telemetryOptions: {
      // The core's own log lines (workflow cache, pollers) reach the logger above, as JSON like every
      // other line, instead of the core's coloured text on stderr; and the wedge watch can hear them.
      logging: { filter: { core: 'WARN', other: 'ERROR' }, forward: {} },
      metrics: { prometheus: { bindAddress, countersTotalSuffix: true, useSecondsForDurations: true, unitSuffix: true } },
    },
  });
  return { sdkMetricsUrl: `http://${bindAddress}/metrics` };
}
