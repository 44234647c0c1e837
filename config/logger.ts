import pino, { type Logger } from 'pino';

/**
 * JSON-lines logger at `level` (the config's `logLevel`, LOG_LEVEL). Redaction is a second line of
 * defence: we never log headers or bodies.
 */
export function createLogger(name: string, level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      name,
      level,
      redact: {
        paths: ['authorization', 'token', 'signature', 'secretKey', '*.authorization', '*.token', '*.signature', '*.secretKey'],
        censor: '[redacted]',
      },
    },
    destination,
  );
}

/**
 * A child that writes at `info` whatever `LOG_LEVEL` says, for the few start/stop lines that
 * supervisors wait for (`npm start` watches for "api listening" and "worker polling task queue"):
 * LOG_LEVEL=warn must quiet the request lines, not hang the start.
 */
export function lifecycleLogger(logger: Logger): Logger {
  return logger.child({}, { level: 'info' });
}
