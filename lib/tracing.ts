import { hostname } from 'node:os';
import type { IncomingHttpHeaders } from 'node:http';
import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api';
import type { Resource } from '@opentelemetry/resources';
import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { redactValue, type Redact } from './redact';

// Tracing is built by hand from the config (the entry points read OTEL_*), not by
// @opentelemetry/sdk-node, which reads the environment itself and loads its auto-instrumentations.
// The spans of the HTTP edge, the storage nodes and the service's own outgoing requests are
// started here, around the code that does the work: no module is patched at load, and a process
// without tracing loads none of the SDK (startTracing imports it only when it is on).

/** Where and how a process exports its spans (config/tracing.ts reads it from the OTEL_* variables). */
export interface TracingConfig {
  /** The full URL spans are POSTed to. */
  readonly url: string;
  readonly protocol: 'http/protobuf' | 'http/json';
  /** Sent with every export (OTEL_EXPORTER_OTLP_HEADERS). */
  readonly headers: Readonly<Record<string, string>>;
  /** OTEL_SERVICE_NAME; unset: `intent-service-<process>`. */
  readonly serviceName?: string;
  readonly resourceAttributes: Readonly<Record<string, string>>;
  readonly sampler:
    'always_on' | 'always_off' | 'traceidratio' | 'parentbased_always_on' | 'parentbased_always_off' | 'parentbased_traceidratio';
  /** The ratio of the `traceidratio` samplers, 0–1. */
  readonly samplerRatio: number;
  /** ms between two exports. */
  readonly exportDelayMs: number;
}

/** A process's registered tracer provider. */
export interface Tracing {
  /** What the worker hands to Temporal's workflow span exporter (its sink). */
  readonly processor: SpanProcessor;
  readonly resource: Resource;
  /** Exports what is left and stops. */
  shutdown(): Promise<void>;
}

/** Export failures are told at most this often. */
const EXPORT_ERROR_INTERVAL_MS = 60_000;

/** The process's tracer; a no-op one until startTracing registers a provider. */
const tracer = trace.getTracer('intent-service');

let on = false;

/** Whether this process traces: the hot paths skip all span work when it does not. */
export const tracingOn = (): boolean => on;

/**
 * Whether the code runs inside a trace (this process traces and a span is active): an outgoing
 * request made outside any (a background probe) starts no trace of its own.
 */
export const inTrace = (): boolean => on && trace.getActiveSpan() !== undefined;

/** Whether an incoming request carries a W3C trace context to continue. */
export const carriesTrace = (headers: IncomingHttpHeaders): boolean => typeof headers.traceparent === 'string';

/**
 * Registers the process's tracer provider from `config` (undefined: nothing is registered, nothing
 * exported, and this resolves undefined). `processName` (`api`, `worker`, `storage-node`) names the
 * service when OTEL_SERVICE_NAME does not; `onExportError` hears of failed exports. Every span
 * (the workflows' ones too) has its name, attributes, status and events' attributes rewritten by
 * `redact` (lib/redact.ts) as it ends, before it is exported.
 */
export async function startTracing(
  config: TracingConfig | undefined,
  processName: string,
  onExportError: (message: string, failures: number) => void = () => undefined,
  redact: Redact = (text) => text,
): Promise<Tracing | undefined> {
  if (config === undefined) return undefined;
  const [{ AsyncLocalStorageContextManager }, { W3CTraceContextPropagator, setGlobalErrorHandler }, { Resource }, base, exporterModule] =
    await Promise.all([
      import('@opentelemetry/context-async-hooks'),
      import('@opentelemetry/core'),
      import('@opentelemetry/resources'),
      import('@opentelemetry/sdk-trace-base'),
      config.protocol === 'http/json'
        ? import('@opentelemetry/exporter-trace-otlp-http')
        : import('@opentelemetry/exporter-trace-otlp-proto'),
    ]);
  const ratio = new base.TraceIdRatioBasedSampler(config.samplerRatio);
  const root = {
    always_on: new base.AlwaysOnSampler(),
    always_off: new base.AlwaysOffSampler(),
    traceidratio: ratio,
  };
  const sampler =
    config.sampler === 'parentbased_always_on'
      ? new base.ParentBasedSampler({ root: root.always_on })
      : config.sampler === 'parentbased_always_off'
        ? new base.ParentBasedSampler({ root: root.always_off })
        : config.sampler === 'parentbased_traceidratio'
          ? new base.ParentBasedSampler({ root: ratio })
          : root[config.sampler];
  const resource = Resource.default().merge(
    new Resource({
      ...config.resourceAttributes,
      'service.name': config.serviceName ?? `intent-service-${processName}`,
      'service.instance.id': `${hostname()}:${process.pid}`,
    }),
  );
  const exporter = new exporterModule.OTLPTraceExporter({ url: config.url, headers: { ...config.headers } });
  const processor = redactingProcessor(new base.BatchSpanProcessor(exporter, { scheduledDelayMillis: config.exportDelayMs }), redact);
  const provider = new base.BasicTracerProvider({ resource, sampler, spanProcessors: [processor] });
  provider.register({ contextManager: new AsyncLocalStorageContextManager().enable(), propagator: new W3CTraceContextPropagator() });
  // A failed export (the collector down or refusing) loses those spans and nothing else; it is
  // told at most once a minute, with the number of failures since the last time.
  let failures = 0;
  let toldAt = -Infinity;
  setGlobalErrorHandler((err) => {
    failures++;
    if (Date.now() - toldAt < EXPORT_ERROR_INTERVAL_MS) return;
    toldAt = Date.now();
    onExportError(err instanceof Error ? err.message : String(err), failures);
    failures = 0;
  });
  on = true;
  return {
    processor,
    resource,
    shutdown: () => provider.shutdown(),
  };
}

/** `inner`, with each span's text rewritten by `redact` as it ends (an ended span's fields are plain objects). */
function redactingProcessor(inner: SpanProcessor, redact: Redact): SpanProcessor {
  const clean = (attributes: Attributes | undefined) => {
    for (const [key, value] of Object.entries(attributes ?? {})) (attributes as Record<string, unknown>)[key] = redactValue(value, redact);
  };
  return {
    onStart: (span, parent) => inner.onStart(span, parent),
    onEnd: (span: ReadableSpan) => {
      const open = span as { -readonly [K in keyof ReadableSpan]: ReadableSpan[K] };
      open.name = redact(span.name);
      clean(span.attributes);
      if (span.status.message !== undefined) open.status = { ...span.status, message: redact(span.status.message) };
      for (const event of span.events) clean(event.attributes);
      inner.onEnd(span);
    },
    forceFlush: () => inner.forceFlush(),
    shutdown: () => inner.shutdown(),
  };
}

/**
 * The active span's ids, for a log line (pino's mixin): `trace_id` and `span_id`, or nothing. A
 * new object each time: pino merges the line's own fields into it.
 */
export function traceFields(): Record<string, string> {
  if (!on) return {};
  const span = trace.getActiveSpan()?.spanContext();
  return span && trace.isSpanContextValid(span) ? { trace_id: span.traceId, span_id: span.spanId } : {};
}

/** Sets attributes on the active span, if any (the execution id, wallet or batch id a route learns). */
export function annotateActiveSpan(attributes: Attributes): void {
  if (on) trace.getActiveSpan()?.setAttributes(attributes);
}

/** A SERVER span and the context to run the request's handling in. */
export interface ServerSpan {
  span: Span;
  context: Context;
}

/**
 * Starts the SERVER span of an incoming request, continuing the caller's trace from its
 * `traceparent` header. `name` is the method until the route is known (setServerRoute).
 */
export function startServerSpan(method: string, path: string, headers: IncomingHttpHeaders, continueCaller = true): ServerSpan {
  const caller = propagation.extract(ROOT_CONTEXT, headers);
  const callerSpan = trace.getSpanContext(caller);
  // A caller the service does not trust starts no trace of ours: it could choose the sampling and
  // see its ids reach storage nodes and webhook receivers. Its span is kept as a link.
  const parent = continueCaller ? caller : ROOT_CONTEXT;
  const links = !continueCaller && callerSpan && trace.isSpanContextValid(callerSpan) ? [{ context: callerSpan }] : [];
  const span = tracer.startSpan(
    method,
    { kind: SpanKind.SERVER, attributes: { 'http.request.method': method, 'url.path': path, 'url.scheme': 'http' }, links },
    parent,
  );
  return { span, context: trace.setSpan(parent, span) };
}

/** Names a SERVER span by its route template (`/api/v1/executions/{wallet}/submit`), as the HTTP conventions say. */
export function setServerRoute(span: Span, method: string, route: string): void {
  span.setAttribute('http.route', route);
  span.updateName(`${method} ${route}`);
}

/** Ends an HTTP span with its answer's status: a 5xx is an error of a SERVER span, a 4xx or 5xx of a CLIENT span. */
export function endHttpSpan(span: Span, kind: 'server' | 'client', status: number | Error): void {
  if (status instanceof Error) {
    span.setAttribute('error.type', status.name === 'Error' ? ((status as { code?: string }).code ?? 'Error') : status.name);
    span.setStatus({ code: SpanStatusCode.ERROR, message: status.message });
  } else {
    span.setAttribute('http.response.status_code', status);
    if (status >= (kind === 'server' ? 500 : 400)) {
      span.setAttribute('error.type', String(status));
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
  }
  span.end();
}

/**
 * Starts the CLIENT span of an outgoing request under the active span and returns it with the
 * `traceparent` header (and `tracestate`, if any) that carries it to the receiver.
 */
export function startClientSpan(method: string, url: URL, attributes: Attributes = {}): { span: Span; headers: Record<string, string> } {
  const span = tracer.startSpan(method, {
    kind: SpanKind.CLIENT,
    attributes: {
      'http.request.method': method,
      // The path without the query: a query may carry a page token.
      'url.full': `${url.origin}${url.pathname}`,
      'server.address': url.hostname,
      'server.port': Number(url.port) || (url.protocol === 'https:' ? 443 : 80),
      ...attributes,
    },
  });
  const headers: Record<string, string> = {};
  propagation.inject(trace.setSpan(context.active(), span), headers);
  return { span, headers };
}

/** Runs `fn` with `span` active (its log lines and child spans belong to it). */
export function withSpan<T>(span: Span, fn: () => T): T {
  return context.with(trace.setSpan(context.active(), span), fn);
}

/** Runs `fn` in `ctx` (a SERVER span's context). */
export function inContext<T>(ctx: Context, fn: () => T): T {
  return context.with(ctx, fn);
}
