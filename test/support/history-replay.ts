import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { historyToJSON, type History } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';
import { projectRoot } from '../../config/config';
import { WORKFLOW_INTERCEPTOR_MODULES, workflowSinks } from '../../worker/tracing';
import { SHARED_WORKFLOW_MODULES } from '../../worker/workflow-bundle';
import { testSettings } from './settings';

/** Where `npm run histories:record` writes the fixtures every run replays. */
export const FIXTURES = path.join(projectRoot, 'test', 'fixtures', 'histories');

const workflowsPath = require.resolve('../../workflows');

/** As the worker runs them: with the workflow interceptor module every worker bundles (tracing), and the workflow modules shared. */
export const replayOptions = (replayName: string) => ({
  workflowsPath,
  bundlerOptions: { preloadModules: [...SHARED_WORKFLOW_MODULES] },
  interceptors: { workflowModules: [...WORKFLOW_INTERCEPTOR_MODULES] },
  sinks: workflowSinks(undefined),
  replayName,
});

/**
 * Replays `histories` with the current workflow code; answers how many of each workflow id prefix
 * were replayed and the failures. With RECORD_HISTORIES=<tag> (e.g. v2) it also writes fixtures
 * named <tag>-<type>-<events>.json: one per workflow type and final history length, a cheap
 * stand-in for "one per path taken".
 */
export async function replayHistories(
  histories: AsyncIterable<{ workflowId: string; history: History | unknown }>,
  replayName: string,
): Promise<{ seen: Map<string, number>; failures: string[] }> {
  const tag = testSettings().RECORD_HISTORIES;
  const recorded = new Set<string>();
  async function* tee() {
    for await (const h of histories) {
      if (tag) {
        const history = h.history as History;
        const type = history.events?.[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name ?? 'unknown';
        const key = `${tag}-${type}-${history.events?.length}`;
        if (!recorded.has(key)) {
          recorded.add(key);
          mkdirSync(FIXTURES, { recursive: true });
          writeFileSync(
            path.join(FIXTURES, `${key}.json`),
            JSON.stringify({ workflowId: h.workflowId, history: JSON.parse(historyToJSON(history)) }),
          );
        }
      }
      yield h as { workflowId: string; history: History };
    }
  }
  const seen = new Map<string, number>();
  const failures: string[] = [];
  for await (const result of Worker.runReplayHistories(replayOptions(replayName), tee())) {
    const type = result.workflowId.split(':')[0];
    seen.set(type, (seen.get(type) ?? 0) + 1);
    if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
  }
  return { seen, failures };
}
