import pino, { type Logger } from 'pino';

/** JSON-lines logger; `LOG_LEVEL` (default info). Redaction is a second line of defence: we never log headers or bodies. */
export function createLogger(name: string, level = process.env.LOG_LEVEL || 'info', destination?: pino.DestinationStream): Logger {
  return pino(
    {
      name,
      level,
      redact: { paths: ['authorization', 'token', 'signature', 'secretKey', '*.authorization', '*.token', '*.signature', '*.secretKey'], censor: '[redacted]' },
    },
    destination,
  );
}
