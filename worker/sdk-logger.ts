import type { LogLevel, LogMetadata, Logger as SdkLogger } from '@temporalio/worker';
import type { Logger } from 'pino';

/**
 * The Temporal SDK's logger interface on top of pino, so the worker writes one format (JSON lines)
 * for its own messages and the SDK's (activity failures, worker state changes, the core's own).
 * `heard` sees every line too, after it is logged (worker/core-wedge.ts listens there).
 */
export function pinoSdkLogger(logger: Logger, heard?: (message: string, meta?: LogMetadata) => void): SdkLogger {
  const at = (level: LogLevel) => (message: string, meta?: LogMetadata) => {
    logger[level.toLowerCase() as 'info'](meta ?? {}, message);
    heard?.(message, meta);
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
