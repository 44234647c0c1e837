import pino, { type Logger } from 'pino';
import { redactor, redactValue, type Secrets } from '../lib/redact';
import { traceFields } from '../lib/tracing';

/**
 * JSON-lines logger at `level` (the config's `logLevel`, LOG_LEVEL). Redaction is a second line of
 * defence: we never log headers or bodies. Every line's message and fields (errors' messages and
 * stacks among them) go through the process's `secrets` rule (lib/redact.ts): a secret URL is
 * written as its origin, another secret as a digest, whoever wrote the line (the SDK's log
 * included). A line written while a span is active carries its `trace_id` and `span_id`
 * (lib/tracing.ts), so a log search finds the trace and back.
 */
export function createLogger(name: string, level: string, destination?: pino.DestinationStream, secrets: Secrets = {}): Logger {
  const redact = redactor(secrets);
  return pino(
    {
      name,
      level,
      mixin: traceFields,
      hooks: {
        logMethod(args, method) {
          method.apply(this, args.map((arg) => redactValue(arg, redact)) as Parameters<typeof method>);
        },
      },
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

interface EndableDestination {
  destroyed: boolean;
  end(): void;
  once(event: 'close', listener: () => void): unknown;
}

/** How long `exitAfterFlush` waits for the log to reach its destination before it exits anyway. */
const FLUSH_BOUND_MS = 2_000;

/**
 * Exits with `code` once every line `logger` wrote has reached its destination. pino writes to
 * stdout asynchronously, and `process.exit` right after a line flushes the rest synchronously past
 * a write still in flight (pino's `flush` does not wait for it), so the last lines came out of
 * order or cut (seen: a request's line after "api stopped"). Ending the destination waits for
 * that write. Bounded: a destination that never drains (its reader gone) cannot hold the exit.
 */
export function exitAfterFlush(logger: Logger, code: number): void {
  setTimeout(() => process.exit(code), FLUSH_BOUND_MS).unref();
  // pino's own destination (sonic-boom): end() writes what is buffered after the write in flight, then emits 'close'.
  const destination = (logger as unknown as Record<symbol, Partial<EndableDestination> | undefined>)[pino.symbols.streamSym];
  if (typeof destination?.end !== 'function' || typeof destination.once !== 'function' || destination.destroyed) process.exit(code);
  destination.once('close', () => process.exit(code));
  destination.end();
}

/**
 * Ends a service process whose `main` failed: one `fatal` line `msg` with the error, then exit 1
 * once it is written. `logger` is the process's own; before main has made it (a setting refused),
 * one named `name` at the default level writes the line.
 */
export function exitOnFailure(name: string, msg: string, logger: Logger | undefined, err: unknown): void {
  const log = logger ?? createLogger(name, 'info');
  log.fatal({ err }, msg);
  exitAfterFlush(log, 1);
}
