import type { LogMetadata } from '@temporalio/worker';

/**
 * What the Temporal core (in @temporalio/worker 1.24.0) logs at the moment it drops a workflow
 * activation it still counts as outstanding: that run completes no workflow task again in this
 * worker until the worker is recreated (docs/decisions/0075). Matched as a substring, so a reworded
 * suffix in a later core still matches; a core that no longer logs it needs no recovery.
 */
export const CORE_WEDGE_LINE = 'Extra buffered run should not have produced an activation';

/**
 * A listener for the SDK's log lines (pinoSdkLogger's `heard`) that calls `onWedge` with the line's
 * metadata for each one that says a run was wedged. The SDK logger is process-wide
 * (Runtime.install), so this is where the worker can hear it.
 */
export function coreWedgeListener(onWedge: (meta: LogMetadata | undefined) => void): (message: string, meta?: LogMetadata) => void {
  return (message, meta) => {
    if (message.includes(CORE_WEDGE_LINE)) onWedge(meta);
  };
}
