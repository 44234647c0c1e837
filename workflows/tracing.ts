import * as otel from '@opentelemetry/api';
import { TRACE_HEADER } from '@temporalio/interceptors-opentelemetry/lib/instrumentation';
import {
  OpenTelemetryInboundInterceptor,
  OpenTelemetryInternalsInterceptor,
  OpenTelemetryOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/workflow';
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
  WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';
import type { Payload } from '@temporalio/common';

// The workflow half of tracing: Temporal's OpenTelemetry interceptors, used only where a trace
// reached the workflow. Every worker bundles this module, tracing or not, so that turning tracing
// on or off does not change the bundle (nor the worker's build id, decision 0068). A call whose
// headers carry no trace context (the caller does not trace) goes straight through: no span is
// made, no tracer is even built in the workflow, and the commands are those of a worker without
// interceptors. Spans leave the sandbox through the worker's `exporter` sink (worker/tracing.ts).

type Headers = Record<string, Payload>;
const traced = (headers: Headers): boolean => headers[TRACE_HEADER] !== undefined;
/** A span is active: the workflow is handling a traced call, so what it schedules is part of that trace. */
const inSpan = (): boolean => otel.trace.getActiveSpan() !== undefined;

class TracedInbound implements WorkflowInboundCallsInterceptor {
  private otel?: OpenTelemetryInboundInterceptor;
  private get traced(): OpenTelemetryInboundInterceptor {
    return (this.otel ??= new OpenTelemetryInboundInterceptor());
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
  private otel?: OpenTelemetryOutboundInterceptor;
  private get traced(): OpenTelemetryOutboundInterceptor {
    return (this.otel ??= new OpenTelemetryOutboundInterceptor());
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

export const interceptors = (): WorkflowInterceptors => ({
  inbound: [new TracedInbound()],
  outbound: [new TracedOutbound()],
  internals: [new OpenTelemetryInternalsInterceptor()],
});
