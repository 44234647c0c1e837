import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parser } from '@prometheus-io/lezer-promql';
import type { Registry } from 'prom-client';
import YAML from 'yaml';
import { projectRoot } from '../../config/config';
import { createApiMetrics } from '../../api/operations/metrics';
import { registerStorageNodeGauge } from '../../api/whitelists/node-health';
import { createWorkerMetrics, refundLedgerMetrics } from '../../worker/metrics';
import { temporalCoreMetricNames } from './temporal-core-metrics';

/** The alerting rules the repository ships (docs/operations.md "Alerts"). */
export const ALERT_RULES_FILE = path.join(projectRoot, 'ops', 'prometheus', 'alerts.yml');

/** One alerting rule as Prometheus reads it from a rules file. */
export interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** Every alerting rule of a rules file's text, in order (a recording rule has no `alert` and is skipped). */
export function alertRules(text: string): AlertRule[] {
  const doc = YAML.parse(text) as { groups?: Array<{ rules?: AlertRule[] }> } | null;
  return (doc?.groups ?? []).flatMap((group) => group.rules ?? []).filter((rule) => rule.alert !== undefined);
}

/** Where the PromQL parser found `expr` not to be PromQL: each error node's offset and the text from there. */
export function promqlErrors(expr: string): string[] {
  const errors: string[] = [];
  // The parser never throws: what it cannot read becomes error nodes (⚠) in the tree.
  parser.parse(expr).iterate({
    enter(node) {
      if (node.type.isError) errors.push(`at ${node.from}: ${JSON.stringify(expr.slice(node.from, node.from + 20) || '(end)')}`);
    },
  });
  return errors;
}

/** The metric names `expr` selects (`name{…}` and `name[5m]`), from the parsed tree: labels and functions are not metrics. */
export function metricNames(expr: string): string[] {
  const names: string[] = [];
  parser.parse(expr).iterate({
    enter(node) {
      if (node.name === 'Identifier' && node.node.parent?.name === 'VectorSelector') names.push(expr.slice(node.from, node.to));
    },
  });
  return names;
}

/** The names a registry's metrics are exposed under: a histogram as its `_bucket`, `_sum` and `_count` series, a summary as itself, `_sum` and `_count`. */
export function exposedNames(registry: Registry): string[] {
  return registry.getMetricsAsArray().flatMap(({ name, type: kind }) => {
    // prom-client's declared enum is its type strings at run time.
    const type = String(kind);
    if (type === 'histogram') return [`${name}_bucket`, `${name}_sum`, `${name}_count`];
    if (type === 'summary') return [name, `${name}_sum`, `${name}_count`];
    return [name];
  });
}

/**
 * Every metric name the API and the worker export: the registries their entry points build
 * (api/app.ts with the operator routes' storage node gauge; worker/main.ts with the refunds
 * ledger's gauges), prom-client's process metrics among them, and the Temporal core's metrics that
 * the worker's endpoint appends (test/support/temporal-core-metrics.ts).
 */
export function exportedMetricNames(): Set<string> {
  const api = createApiMetrics().registry;
  registerStorageNodeGauge(api, [], {} as never);
  const worker = createWorkerMetrics([]).registry;
  refundLedgerMetrics(worker, () => undefined);
  return new Set([...exposedNames(api), ...exposedNames(worker), ...temporalCoreMetricNames()]);
}

/** What is wrong with a rules file's text: an expression that is not PromQL, a metric nobody exports, a rule without its parts; empty when nothing. */
export function ruleProblems(text: string, exported: ReadonlySet<string>): string[] {
  const rules = alertRules(text);
  if (rules.length === 0) return ['no alerting rule in the file'];
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const rule of rules) {
    const name = rule.alert;
    if (typeof rule.expr !== 'string' || rule.expr.trim() === '') {
      problems.push(`${name}: no expr`);
      continue;
    }
    if (seen.has(name)) problems.push(`${name}: named twice`);
    seen.add(name);
    for (const error of promqlErrors(rule.expr)) problems.push(`${name}: not PromQL ${error} in ${rule.expr}`);
    const metrics = metricNames(rule.expr);
    if (metrics.length === 0) problems.push(`${name}: names no metric`);
    for (const metric of metrics) if (!exported.has(metric)) problems.push(`${name}: ${metric} is not exported by the API or the worker`);
    if (rule.for !== undefined && !/^([0-9]+(ms|s|m|h|d|w|y))+$/.test(rule.for))
      problems.push(`${name}: for ${rule.for} is not a duration`);
    if (!['page', 'ticket'].includes(rule.labels?.severity ?? '')) problems.push(`${name}: severity is not page or ticket`);
    if (!rule.annotations?.summary) problems.push(`${name}: no summary`);
  }
  return problems;
}

/** The repository's rules file. */
export const readAlertRules = () => readFileSync(ALERT_RULES_FILE, 'utf8');
