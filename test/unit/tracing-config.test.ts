import assert from 'node:assert/strict';
import { TRACE_HEADER as TEMPORAL_TRACE_HEADER } from '@temporalio/interceptors-opentelemetry/lib/instrumentation';
import { ConfigError, loadConfig } from '../../config/config';
import { TRACE_HEADER } from '../../workflows/tracing';

describe('config: tracing (OTEL_*)', () => {
  it('when no OTLP endpoint is set, or OTEL_SDK_DISABLED is true, then tracing is off (no tracing config), whatever the other OTEL_* say', () => {
    assert.equal(loadConfig({}).tracing, undefined);
    assert.equal(loadConfig({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' }).tracing, undefined);
    assert.equal(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_SDK_DISABLED: 'TRUE' }).tracing, undefined);
  });

  it('when OTEL_EXPORTER_OTLP_ENDPOINT is set, then spans go to its /v1/traces over http/protobuf, sampled parent-based, every 5 s', () => {
    const tracing = loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318/' }).tracing;
    assert.deepEqual(tracing, {
      url: 'http://127.0.0.1:4318/v1/traces',
      protocol: 'http/protobuf',
      headers: {},
      serviceName: undefined,
      resourceAttributes: {},
      sampler: 'parentbased_always_on',
      samplerRatio: 1,
      exportDelayMs: 5000,
    });
  });

  it('when every variable is set, then each is read: the traces endpoint as it is, http/json, URL-decoded headers and attributes, the ratio sampler', () => {
    const tracing = loadConfig({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://ignored:4318',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://collector.example/otlp/traces',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20abc, x-team=pay',
      OTEL_SERVICE_NAME: 'intents',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=prod,region=eu%2Cwest',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
      OTEL_BSP_SCHEDULE_DELAY: '200',
    }).tracing;
    assert.deepEqual(tracing, {
      url: 'https://collector.example/otlp/traces',
      protocol: 'http/json',
      headers: { authorization: 'Bearer abc', 'x-team': 'pay' },
      serviceName: 'intents',
      resourceAttributes: { 'deployment.environment.name': 'prod', region: 'eu,west' },
      sampler: 'parentbased_traceidratio',
      samplerRatio: 0.25,
      exportDelayMs: 200,
    });
  });

  it('when a value is wrong, then the start fails with a ConfigError naming the variable', () => {
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, /OTEL_EXPORTER_OTLP_ENDPOINT must be an http\(s\) URL/],
      [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, /OTEL_EXPORTER_OTLP_PROTOCOL must be one of/],
      [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_SAMPLER_ARG: '2' }, /OTEL_TRACES_SAMPLER_ARG must be a ratio/],
      [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_RESOURCE_ATTRIBUTES: 'novalue' }, /OTEL_RESOURCE_ATTRIBUTES must be key=value/],
      [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_SAMPLER: 'sometimes' }, /OTEL_TRACES_SAMPLER must be one of/],
    ];
    for (const [env, message] of cases)
      assert.throws(
        () => loadConfig(env),
        (err: Error) => err instanceof ConfigError && message.test(err.message),
      );
  });
});

describe('tracing: the workflow interceptors (workflows/tracing.ts)', () => {
  it("when a call's headers are checked for a trace, then the header looked for is the one Temporal's client interceptor writes", () => {
    assert.equal(TRACE_HEADER, TEMPORAL_TRACE_HEADER);
  });
});
