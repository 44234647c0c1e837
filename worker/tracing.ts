import {
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  makeWorkflowExporter,
} from '@temporalio/interceptors-opentelemetry/lib/worker';
import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, InjectedSinks, Next, WorkerInterceptors } from '@temporalio/worker';
import { TRACE_HEADER } from '../workflows/tracing';
import type { WorkflowInfo } from '@temporalio/workflow';
import type { OpenTelemetryWorkflowExporter } from '@temporalio/interceptors-opentelemetry/lib/workflow/definitions';
import { redactError, type Redact } from '../lib/redact';
import type { Tracing } from '../lib/tracing';

/**
 * The workflow interceptor module every worker bundles, tracing or not (workflows/tracing.ts):
 * the bundle, and so the build id, does not depend on whether tracing is on.
 */
export const WORKFLOW_INTERCEPTOR_MODULES: readonly string[] = [require.resolve('../workflows/tracing')];

/**
 * The sink the workflow's spans leave the sandbox by: into the process's span processor when it
 * traces, dropped when it does not (a traced caller can still reach a worker that does not trace).
 */
export function workflowSinks(tracing: Tracing | undefined): InjectedSinks<{ exporter: OpenTelemetryWorkflowExporter }> {
  if (!tracing) return { exporter: { export: { fn: () => undefined } } };
  const exporter = makeWorkflowExporter(tracing.processor, tracing.resource);
  return {
    exporter: {
      export: {
        // Temporal's exporter copies the whole WorkflowInfo onto every workflow span (memo, search
        // attributes, last result and failure among it); a span gets only what names the run.
        fn: (info, spans) => exporter.export.fn(spanInfo(info), spans),
      },
    },
  };
}

const SPAN_INFO_FIELDS = ['workflowId', 'runId', 'workflowType', 'taskQueue', 'namespace', 'attempt', 'currentBuildId'] as const;

function spanInfo(info: WorkflowInfo): WorkflowInfo {
  const kept: Record<string, unknown> = {};
  for (const field of SPAN_INFO_FIELDS) if (info[field] !== undefined) kept[field] = info[field];
  return kept as unknown as WorkflowInfo;
}

/**
 * The activity interceptors of every worker. Innermost, where an error leaves the activity: its
 * message, stack and causes go through `redact` (lib/redact.ts), so the failure Temporal keeps in
 * the workflow's history, the SDK's log line and the activity's span name no secret. With tracing,
 * each attempt of an activity whose workflow was traced is a span under the workflow's
 * StartActivity span. One scheduled outside a trace (the chain watcher's rounds, the refund sweep)
 * makes none, as its workflow made none.
 */
export function activityInterceptors(tracing: Tracing | undefined, redact: Redact): NonNullable<WorkerInterceptors['activity']> {
  const redacting = () => ({
    inbound: {
      execute: async (input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>) => {
        try {
          return await next(input);
        } catch (err) {
          throw redactError(err, redact);
        }
      },
    },
  });
  if (!tracing) return [redacting];
  return [
    (ctx) => {
      const traced = new OpenTelemetryActivityInboundInterceptor(ctx);
      return {
        inbound: {
          execute: (input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>) =>
            input.headers[TRACE_HEADER] === undefined ? next(input) : traced.execute(input, next),
        },
        outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
      };
    },
    // Last is innermost: the tracing interceptor above records the error already rewritten.
    redacting,
  ];
}
