import type { LogLevel, LogMetadata, Logger as SdkLogger } from '@temporalio/worker';

/**
 * What the Temporal core (in @temporalio/worker 1.24.0) logs at the moment it drops a workflow
 * activation it still counts as outstanding: that run completes no workflow task again in this
 * worker until the worker is recreated (docs/decisions/0075). Matched as a substring, so a reworded
 * suffix in a later core still matches; a core that no longer logs it needs no recovery.
 */
export const CORE_WEDGE_LINE = 'Extra buffered run should not have produced an activation';

/**
 * Passes every SDK log line to `logger` and calls `onWedge` (with the line's metadata) for each one
 * that says a run was wedged. The SDK logger is process-wide (Runtime.install), so this is where
 * the worker can hear it.
 */
export function watchForCoreWedge(logger: SdkLogger, onWedge: (meta: LogMetadata | undefined) => void): SdkLogger {
  const seen = (message: string, meta?: LogMetadata) => {
    if (message.includes(CORE_WEDGE_LINE)) onWedge(meta);
  };
  const at =
    (level: LogLevel) =>
    (message: string, meta?: LogMetadata): void => {
      logger.log(level, message, meta);
      seen(message, meta);
    };
  return {
    log: (level, message, meta) => at(level)(message, meta),
    trace: at('TRACE'),
    debug: at('DEBUG'),
    info: at('INFO'),
    warn: at('WARN'),
    error: at('ERROR'),
  };
}
