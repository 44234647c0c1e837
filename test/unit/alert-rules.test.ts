import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../config/config';
import { alertRules, exportedMetricNames, metricNames, promqlErrors, readAlertRules, ruleProblems } from '../support/alert-rules';

/** A rules file of one rule. */
const oneRule = (expr: string, alert = 'Broken') =>
  `groups:\n  - name: g\n    rules:\n      - alert: ${alert}\n        expr: '${expr}'\n        labels:\n          severity: page\n        annotations:\n          summary: s\n`;

describe('alert rules: ops/prometheus/alerts.yml loads into Prometheus and watches what exists', () => {
  const exported = exportedMetricNames();

  it('when the shipped rules file is read, then every expression is PromQL and every metric it names is one the API or the worker exports', () => {
    const rules = alertRules(readAlertRules());
    assert.ok(rules.length >= 20, `found the rules: ${rules.map((r) => r.alert).join(', ')}`);
    assert.deepEqual(ruleProblems(readAlertRules(), exported), []);
  });

  it('when the exported names are collected, then they hold both processes’ own metrics, a histogram’s series, the process metrics and the Temporal core’s', () => {
    for (const name of [
      'intent_http_requests_total', // API
      'intent_storage_node_up', // API, the operator routes' gauge
      'intent_refunds_oldest_due_seconds', // worker, the refunds ledger's gauges
      'intent_storage_node_request_duration_seconds_bucket',
      'intent_storage_node_request_duration_seconds_count',
      'process_cpu_user_seconds_total',
      'temporal_sticky_cache_size',
      'temporal_sticky_cache_total_forced_eviction_total',
      'temporal_workflow_task_schedule_to_start_latency_seconds_bucket',
      'temporal_workflow_endtoend_latency_seconds_bucket', // named by a constant with a digit
    ])
      assert.ok(exported.has(name), name);
    assert.equal(exported.has('intent_storage_node_request_duration_seconds'), false, 'a histogram is exposed as its series only');
  });

  it('when an expression is not PromQL (a grouping after a function, an unclosed call, a bad range), then the checker names the rule', () => {
    for (const expr of [
      'rate(intent_storage_node_failures_total[5m]) by (node)',
      'sum(rate(intent_http_requests_total[5m])',
      'rate(intent_http_requests_total[5 minutes])',
      'intent_storage_node_up ==',
    ]) {
      assert.ok(promqlErrors(expr).length > 0, `${expr} parsed`);
      const problems = ruleProblems(oneRule(expr), exported);
      assert.ok(
        problems.some((p) => p.startsWith('Broken: not PromQL')),
        `${expr}: ${problems.join('; ')}`,
      );
    }
    assert.deepEqual(promqlErrors('sum by (node) (rate(intent_storage_node_failures_total[5m])) > 0'), []);
  });

  it('when an expression names a metric nobody exports (a typo, a histogram without its suffix), then the checker names the rule and the metric', () => {
    assert.deepEqual(ruleProblems(oneRule('intent_storage_node_upp == 0'), exported), [
      'Broken: intent_storage_node_upp is not exported by the API or the worker',
    ]);
    assert.deepEqual(
      ruleProblems(oneRule('histogram_quantile(0.99, sum by (le) (rate(intent_storage_node_request_duration_seconds[5m]))) > 1'), exported),
      ['Broken: intent_storage_node_request_duration_seconds is not exported by the API or the worker'],
    );
    assert.deepEqual(ruleProblems(oneRule('rate(temporal_sticky_cache_forced_eviction_total[5m]) > 0'), exported), [
      'Broken: temporal_sticky_cache_forced_eviction_total is not exported by the API or the worker',
    ]);
    // Label names and functions are not metrics.
    assert.deepEqual(metricNames('sum by (node) (rate(intent_storage_node_failures_total{reason="NodeTimeout"}[5m]))'), [
      'intent_storage_node_failures_total',
    ]);
  });

  it('when a rule lacks its parts or repeats a name, then the checker says so', () => {
    const twice = `${oneRule('intent_storage_node_up == 0', 'Same')}${oneRule('intent_storage_node_up == 0', 'Same').split('rules:\n')[1]}`;
    assert.deepEqual(ruleProblems(twice, exported), ['Same: named twice']);
    assert.deepEqual(ruleProblems('groups: []\n', exported), ['no alerting rule in the file']);
    assert.deepEqual(ruleProblems(oneRule('intent_storage_node_up == 0').replace('severity: page', 'severity: loud'), exported), [
      'Broken: severity is not page or ticket',
    ]);
  });

  it('when docs/operations.md "Alerts" is read, then it links the rules file and has a row for each of its alerts, and no expression of one', () => {
    const page = readFileSync(path.join(projectRoot, 'docs', 'operations.md'), 'utf8');
    const section = page.split('\n## Alerts')[1].split('\n## ')[0];
    assert.match(section, /\]\(\.\.\/ops\/prometheus\/alerts\.yml\)/);
    const rules = alertRules(readAlertRules());
    // The first cell of each row names its alerts.
    const rows = section
      .split('\n')
      .filter((line) => line.startsWith('| '))
      .flatMap((line) => [...line.split('|')[1].matchAll(/`(Intent[A-Za-z]+)`/g)].map((m) => m[1]));
    assert.deepEqual([...rows].sort(), rules.map((r) => r.alert).sort());
    // The expressions live in the file only: a page that repeats one drifts from it.
    assert.deepEqual(
      rules.filter((r) => page.includes(r.expr)).map((r) => r.alert),
      [],
    );
    assert.doesNotMatch(page, /\b(rate|increase)\(intent_/);
  });
});
