import type {
  ActivityInput,
  ContinueAsNewInput,
  GetLogAttributesInput,
  LocalActivityInput,
  Next,
  QueryInput,
  SignalInput,
  SignalWorkflowInput,
  StartChildWorkflowExecutionInput,
  UpdateInput,
  WorkflowExecuteInput,
  WorkflowInboundCallsInterceptor,
  WorkflowInterceptors,
  WorkflowInternalsInterceptor,
  WorkflowOutboundCallsInterceptor,
  DisposeInput,
} from '@temporalio/workflow';
import type { Payload } from '@temporalio/common';
import type * as OtelApi from '@opentelemetry/api';
import type * as OtelWorkflow from '@temporalio/interceptors-opentelemetry/lib/workflow';

// The workflow half of tracing: Temporal's OpenTelemetry interceptors, used only where a trace
// reached the workflow. Every worker bundles this module, tracing or not, so that turning tracing
// on or off does not change the bundle (nor the worker's build id, decision 0068). A call whose
// headers carry no trace context (the caller does not trace) goes straight through: no span is
// made, no tracer is even built in the workflow, and the commands are those of a worker without
// interceptors. Spans leave the sandbox through the worker's `exporter` sink (worker/tracing.ts).
//
// Each workflow evaluates this module anew (the reusable V8 context gives every workflow its own
// module cache), so the OpenTelemetry modules are required only when a traced call arrives: an
// untraced workflow does not pay for evaluating the SDK.

/** The header Temporal's OpenTelemetry client interceptor carries the trace context in (its TRACE_HEADER). */
export const TRACE_HEADER = '_tracer-data';

type Headers = Record<string, Payload>;
const traced = (headers: Headers): boolean => headers[TRACE_HEADER] !== undefined;

let loaded: { workflow: typeof OtelWorkflow; api: typeof OtelApi } | undefined;
function otel(): { workflow: typeof OtelWorkflow; api: typeof OtelApi } {
  loaded ??= {
    workflow: require('@temporalio/interceptors-opentelemetry/lib/workflow') as typeof OtelWorkflow,
    api: require('@opentelemetry/api') as typeof OtelApi,
  };
  return loaded;
}

/** A span is active: the workflow is handling a traced call, so what it schedules is part of that trace. */
const inSpan = (): boolean => loaded !== undefined && loaded.api.trace.getActiveSpan() !== undefined;

class TracedInbound implements WorkflowInboundCallsInterceptor {
  private otel?: OtelWorkflow.OpenTelemetryInboundInterceptor;
  private get traced(): OtelWorkflow.OpenTelemetryInboundInterceptor {
    return (this.otel ??= new (otel().workflow.OpenTelemetryInboundInterceptor)());
  }

  execute(input: WorkflowExecuteInput, next: Next<WorkflowInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    return traced(input.headers) ? this.traced.execute(input, next) : next(input);
  }

  handleSignal(input: SignalInput, next: Next<WorkflowInboundCallsInterceptor, 'handleSignal'>): Promise<void> {
    return traced(input.headers) ? this.traced.handleSignal(input, next) : next(input);
  }

  handleUpdate(input: UpdateInput, next: Next<WorkflowInboundCallsInterceptor, 'handleUpdate'>): Promise<unknown> {
    return traced(input.headers) ? this.traced.handleUpdate(input, next) : next(input);
  }

  validateUpdate(input: UpdateInput, next: Next<WorkflowInboundCallsInterceptor, 'validateUpdate'>): void {
    if (traced(input.headers)) this.traced.validateUpdate(input, next);
    else next(input);
  }

  handleQuery(input: QueryInput, next: Next<WorkflowInboundCallsInterceptor, 'handleQuery'>): Promise<unknown> {
    return traced(input.headers) ? this.traced.handleQuery(input, next) : next(input);
  }
}

class TracedOutbound implements WorkflowOutboundCallsInterceptor {
  private otel?: OtelWorkflow.OpenTelemetryOutboundInterceptor;
  private get traced(): OtelWorkflow.OpenTelemetryOutboundInterceptor {
    return (this.otel ??= new (otel().workflow.OpenTelemetryOutboundInterceptor)());
  }

  scheduleActivity(input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>): Promise<unknown> {
    return inSpan() ? this.traced.scheduleActivity(input, next) : next(input);
  }

  scheduleLocalActivity(
    input: LocalActivityInput,
    next: Next<WorkflowOutboundCallsInterceptor, 'scheduleLocalActivity'>,
  ): Promise<unknown> {
    return inSpan() ? this.traced.scheduleLocalActivity(input, next) : next(input);
  }

  startChildWorkflowExecution(
    input: StartChildWorkflowExecutionInput,
    next: Next<WorkflowOutboundCallsInterceptor, 'startChildWorkflowExecution'>,
  ): Promise<[Promise<string>, Promise<unknown>]> {
    return inSpan() ? this.traced.startChildWorkflowExecution(input, next) : next(input);
  }

  continueAsNew(input: ContinueAsNewInput, next: Next<WorkflowOutboundCallsInterceptor, 'continueAsNew'>): Promise<never> {
    return inSpan() ? this.traced.continueAsNew(input, next) : next(input);
  }

  signalWorkflow(input: SignalWorkflowInput, next: Next<WorkflowOutboundCallsInterceptor, 'signalWorkflow'>): Promise<void> {
    return inSpan() ? this.traced.signalWorkflow(input, next) : next(input);
  }

  /** The workflow's log lines carry the active span's trace_id and span_id. */
  getLogAttributes(
    input: GetLogAttributesInput,
    next: Next<WorkflowOutboundCallsInterceptor, 'getLogAttributes'>,
  ): Record<string, unknown> {
    return inSpan() ? this.traced.getLogAttributes(input, next) : next(input);
  }
}

class TracedInternals implements WorkflowInternalsInterceptor {
  /** Disables the workflow's OpenTelemetry context manager, if a traced call made one. */
  dispose(input: DisposeInput, next: Next<WorkflowInternalsInterceptor, 'dispose'>): void {
    // Temporal's dispose is async but does its work (and calls next) before its first await.
    if (loaded) void new loaded.workflow.OpenTelemetryInternalsInterceptor().dispose(input, next);
    else next(input);
  }
}

export const interceptors = (): WorkflowInterceptors => ({
  inbound: [new TracedInbound()],
  outbound: [new TracedOutbound()],
  internals: [new TracedInternals()],
});
