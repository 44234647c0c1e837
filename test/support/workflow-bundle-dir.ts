import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

let dir: string | undefined;

/**
 * The env that lets the worker processes of this test run share one workflow bundle
 * (TEST_WORKFLOW_BUNDLE_DIR, worker/workflow-bundle.ts): the first one bundles, the others read its
 * file instead of spending about 3 s of a core each. One folder per run, made at the first call, so
 * that a rebuilt dist never meets a bundle of the code before it.
 */
export function sharedBundleEnv(): { TEST_WORKFLOW_BUNDLE_DIR: string } {
  dir ??= mkdtempSync(path.join(os.tmpdir(), 'intent-service-bundle-'));
  return { TEST_WORKFLOW_BUNDLE_DIR: dir };
}

/** Removes the run's folder (the root hooks call it once the run is over). */
export function removeSharedBundleDir(): void {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
}
