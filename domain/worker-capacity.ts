/**
 * Capacity that grows with the workers (docs/decisions/0107). Each worker of the executions' task
 * queue takes at most its own bound of open runs (WORKER_OPEN_RUNS) and announces it; the service
 * admits what its live workers can hold if any one of them dies.
 */

/** One worker's announcement, as the admission reads it. */
export interface WorkerBound {
  /** The open runs the worker takes at most. */
  openRuns: number;
}

/**
 * The open runs the service admits, given the bounds of the live workers of the current build: the
 * sum less the largest bound, so that when one worker dies its runs fit on the others; a single
 * worker admits its own bound; no live worker admits none.
 */
export function admittedOpenRuns(workers: readonly WorkerBound[]): number {
  if (workers.length === 0) return 0;
  if (workers.length === 1) return workers[0].openRuns;
  const sum = workers.reduce((total, w) => total + w.openRuns, 0);
  const largest = Math.max(...workers.map((w) => w.openRuns));
  return sum - largest;
}

/** What a worker's workflow task slots are doing: permits held (reserved, used or not) of each kind. */
export interface SlotState {
  /** Permits held by sticky polls and their tasks (runs this worker already caches). */
  sticky: number;
  /** Permits held by polls of the task queue itself and their tasks: each may bring a new run. */
  nonSticky: number;
  /** Runs in the worker's cache now. */
  cached: number;
}

/** The limits a worker's slots keep. */
export interface SlotLimits {
  /** Workflow tasks at once (sticky and not). */
  concurrent: number;
  /** Open runs this worker takes at most (WORKER_OPEN_RUNS). */
  openRuns: number;
}

/**
 * Whether a workflow task slot may be handed out now. Every slot stays within `concurrent`. A slot
 * for a poll of the task queue itself (not sticky) may bring a run this worker does not cache, so
 * it is handed out only while the cached runs and every such slot already held stay below the
 * bound: a run enters the cache only through such a slot, so the cache never holds more than the
 * bound. A sticky slot serves a run already cached and is never held back for the bound.
 */
export function maySlot(sticky: boolean, state: SlotState, limits: SlotLimits): boolean {
  if (state.sticky + state.nonSticky >= limits.concurrent) return false;
  if (sticky) return true;
  return state.cached + state.nonSticky < limits.openRuns;
}
