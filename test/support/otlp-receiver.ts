import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
// The OTLP protobuf definitions the exporters themselves are built from (they come with them).
import * as otlpProto from '@opentelemetry/otlp-transformer/build/src/generated/root';

interface MessageType {
  decode(bytes: Uint8Array): object;
  toObject(message: object, options: { longs: StringConstructor; bytes: StringConstructor }): any;
}
/** Its static module types the root as a bare protobufjs Root: the message is looked up by its path. */
const ExportTraceServiceRequest = (otlpProto as unknown as { opentelemetry: any }).opentelemetry.proto.collector.trace.v1
  .ExportTraceServiceRequest as MessageType;

/** One span as an OTLP/JSON export carries it, with its resource's attributes beside it. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** Empty for a root span. */
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  startNs: bigint;
  endNs: bigint;
  attributes: Record<string, string | number | boolean>;
  /** `service.name`, `service.instance.id`, … of the process that made it. */
  resource: Record<string, string | number | boolean>;
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  statusCode: number;
  /** The spans it links to (not its parent): another trace's, for example. */
  links: Array<{ traceId: string; spanId: string }>;
}

type AnyValue = { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean };
type KeyValue = { key: string; value: AnyValue };

const valueOf = (v: AnyValue): string | number | boolean =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : (v.doubleValue ?? v.boolValue ?? ''));
const attributesOf = (list: KeyValue[] | undefined) => Object.fromEntries((list ?? []).map((kv) => [kv.key, valueOf(kv.value)]));

/**
 * An OTLP/HTTP receiver of the test's own: `POST /v1/traces` with a JSON or protobuf body (the
 * http/json and http/protobuf protocols), every span kept in `spans` in arrival order. What a
 * collector does, without one.
 */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** Each accepted export whole, as JSON text (status messages and events included), for a test that searches all of it. */
  readonly exports: string[] = [];
  /** Export requests received (any path). */
  requests = 0;
  /** Accepted exports by their encoding (OTEL_EXPORTER_OTLP_PROTOCOL http/json or http/protobuf). */
  readonly byType = { json: 0, protobuf: 0 };
  private server?: Server;
  url = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        this.requests++;
        const type = String(req.headers['content-type']);
        const json = type.startsWith('application/json');
        if (req.method !== 'POST' || req.url !== '/v1/traces' || !(json || type.startsWith('application/x-protobuf'))) {
          res.writeHead(415).end();
          return;
        }
        this.byType[json ? 'json' : 'protobuf']++;
        const raw = Buffer.concat(chunks);
        const bytes = req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw;
        // Protobuf ids are bytes (base64 here), JSON ones hex: both end as hex.
        const body = json
          ? JSON.parse(bytes.toString('utf8'))
          : ExportTraceServiceRequest.toObject(ExportTraceServiceRequest.decode(bytes), { longs: String, bytes: String });
        this.exports.push(JSON.stringify(body));
        const id = (v: string | undefined) => (json || !v ? (v ?? '') : Buffer.from(v, 'base64').toString('hex'));
        for (const rs of body.resourceSpans ?? []) {
          const resource = attributesOf(rs.resource?.attributes);
          for (const ss of rs.scopeSpans ?? [])
            for (const s of ss.spans ?? [])
              this.spans.push({
                traceId: id(s.traceId),
                spanId: id(s.spanId),
                parentSpanId: id(s.parentSpanId),
                name: s.name,
                kind: s.kind,
                startNs: BigInt(s.startTimeUnixNano),
                endNs: BigInt(s.endTimeUnixNano),
                attributes: attributesOf(s.attributes),
                resource,
                statusCode: s.status?.code ?? 0,
                links: ((s.links ?? []) as Array<{ traceId?: string; spanId?: string }>).map((l) => ({
                  traceId: id(l.traceId),
                  spanId: id(l.spanId),
                })),
              });
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** The span with this id; undefined if it has not arrived. */
  span(spanId: string): ReceivedSpan | undefined {
    return this.spans.find((s) => s.spanId === spanId);
  }

  /**
   * The spans from `spanId` up to its trace's root, each the parent of the one before; stops at
   * the first parent that has not arrived (the last element then has a parentSpanId not received).
   */
  chain(spanId: string): ReceivedSpan[] {
    const out: ReceivedSpan[] = [];
    for (let s = this.span(spanId); s; s = s.parentSpanId ? this.span(s.parentSpanId) : undefined) out.push(s);
    return out;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
