import {
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  makeWorkflowExporter,
} from '@temporalio/interceptors-opentelemetry/lib/worker';
import type { InjectedSinks, WorkerInterceptors } from '@temporalio/worker';
import type { OpenTelemetryWorkflowExporter } from '@temporalio/interceptors-opentelemetry/lib/workflow/definitions';
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
  return {
    exporter: tracing ? makeWorkflowExporter(tracing.processor, tracing.resource) : { export: { fn: () => undefined } },
  };
}

/** The activity interceptors of a tracing worker: each attempt is a span under the workflow's StartActivity span. */
export function activityInterceptors(tracing: Tracing | undefined): WorkerInterceptors['activity'] {
  if (!tracing) return [];
  return [
    (ctx) => ({
      inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
      outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
    }),
  ];
}
