import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { envSettingsOf } from '../../config/read-settings';
import { WORKFLOW_BUNDLE_SETTINGS } from '../../worker/workflow-bundle';

let dir: string | undefined;
// A folder the suite runner made for all its mocha processes: theirs to share, the runner's to remove.
const inherited = envSettingsOf(WORKFLOW_BUNDLE_SETTINGS).TEST_WORKFLOW_BUNDLE_DIR;

/**
 * The env that lets the worker processes of this test run share one workflow bundle
 * (TEST_WORKFLOW_BUNDLE_DIR, worker/workflow-bundle.ts): the first one bundles, the others read its
 * file instead of spending about 3 s of a core each. One folder per run, made at the first call, so
 * that a rebuilt dist never meets a bundle of the code before it; under the suite runner
 * (test/run-suite.ts), the runner's folder, shared by all its mocha processes.
 */
export function sharedBundleEnv(): { TEST_WORKFLOW_BUNDLE_DIR: string } {
  dir ??= inherited ?? mkdtempSync(path.join(os.tmpdir(), 'intent-service-bundle-'));
  return { TEST_WORKFLOW_BUNDLE_DIR: dir };
}

/** Removes the run's folder (the root hooks call it once the run is over). */
export function removeSharedBundleDir(): void {
  if (dir !== undefined && dir !== inherited) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
}
