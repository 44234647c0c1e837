import type { LogLevel, LogMetadata, Logger as SdkLogger } from '@temporalio/worker';
import type { Logger } from 'pino';

/**
 * The Temporal SDK's logger interface on top of pino, so the worker writes one format (JSON lines)
 * for its own messages and the SDK's (activity failures, worker state changes).
 */
export function pinoSdkLogger(logger: Logger): SdkLogger {
  const at = (level: LogLevel) => (message: string, meta?: LogMetadata) => logger[level.toLowerCase() as 'info'](meta ?? {}, message);
  return {
    log: (level, message, meta) => at(level)(message, meta),
    trace: at('TRACE'),
    debug: at('DEBUG'),
    info: at('INFO'),
    warn: at('WARN'),
    error: at('ERROR'),
  };
}
