// The floor worker's one activity: a local activity that does nothing, so that
// `oneLocalActivityWorkflow` measures what a single local-activity round costs and nothing else.

/** Answers at once. */
export async function settle(): Promise<string> {
  return 'done';
}
