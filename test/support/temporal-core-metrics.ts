import { readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The Temporal core's metric definitions, read from the core's own source, which
 * @temporalio/core-bridge ships beside its binary (the SDK version package.json pins): the
 * worker's instruments (polls, task latencies, slots, sticky cache) and its client's requests.
 */
const CORE_SOURCES = ['crates/sdk-core/src/telemetry/metrics.rs', 'crates/client/src/metrics.rs'];
/** Where the core keeps the names some of those definitions use by constant. */
const CORE_NAME_SOURCES = ['crates/common/src/telemetry/metrics.rs', ...CORE_SOURCES];

const coreFile = (file: string) =>
  readFileSync(path.join(path.dirname(require.resolve('@temporalio/core-bridge/package.json')), 'sdk-core', file), 'utf8')
    // Its unit tests define metrics of their own.
    .split(/#\[cfg\(test\)\]\s*mod tests/)[0];

/**
 * The names the worker's endpoint exposes the core's metrics under, as worker/runtime.ts has the
 * core's Prometheus exporter write them: `temporal_` first, `_total` after a counter's name, a
 * duration histogram in seconds (`_seconds`) as its `_bucket`, `_sum` and `_count` series.
 */
export function temporalCoreMetricNames(): string[] {
  const constants = new Map<string, string>();
  for (const file of CORE_NAME_SOURCES)
    for (const m of coreFile(file).matchAll(/(?:const|static) ([A-Z0-9_]+): &str =\s*"([a-z_]+)"/g)) constants.set(m[1], m[2]);
  const names: string[] = [];
  for (const file of CORE_SOURCES) {
    const text = coreFile(file);
    // `meter.counter(MetricParameters { name: "…".into(), … })`, `histogram_with_in_mem(MetricParameters { name: CONST.into(), … })`, …
    const definitions = [...text.matchAll(/\.?([a-z_]+)\(MetricParameters \{\s*name: (?:"([a-z_]+)"|([A-Z0-9_]+))\.into\(\)/g)];
    // A definition this reader could not read would be a metric it does not know of.
    const written = text.split('(MetricParameters {').length - 1;
    if (definitions.length !== written) throw new Error(`read ${definitions.length} of the ${written} metric definitions of ${file}`);
    for (const [, kind, literal, constant] of definitions) {
      const base = `temporal_${literal ?? constants.get(constant)}`;
      if (base === 'temporal_undefined') throw new Error(`the core names a metric by ${constant}, which its sources do not define`);
      if (kind.includes('counter')) names.push(`${base}_total`);
      else if (kind.includes('histogram')) names.push(...['_bucket', '_sum', '_count'].map((s) => `${base}_seconds${s}`));
      else if (kind.includes('gauge')) names.push(base);
      else throw new Error(`the core defines ${base} with ${kind}, which this reader does not know`);
    }
  }
  return names;
}
