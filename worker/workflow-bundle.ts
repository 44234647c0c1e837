import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { envSettingsOf } from '../config/read-settings';
import type { SettingsTable } from '../config/setting-row';

/**
 * A test-only knob. The test runs start dozens of worker processes (every SIGKILL test starts a new
 * one), and each would bundle the same workflow code again: about 3 s of a core each time. With
 * this set, the first worker process of a run writes its bundle into the folder and the others read
 * it. The folder must be fresh for each build of the code (the test runs make one per run).
 */
export const WORKFLOW_BUNDLE_SETTINGS = {
  TEST_WORKFLOW_BUNDLE_DIR: {
    kind: 'string',
    readBy: 'tests',
    description:
      'a folder (fresh per build) where worker processes share the workflow bundles they made instead of each bundling again; the test runs set it, one per mocha run',
  },
} as const satisfies SettingsTable;

export interface BundleOptions {
  workflowsPath: string;
  workflowInterceptorModules?: string[];
  payloadConverterPath?: string;
  failureConverterPath?: string;
  ignoreModules?: string[];
  /** Modules evaluated once per workflow thread and shared by its workflows (see SHARED_WORKFLOW_MODULES). */
  preloadModules?: string[];
}

/**
 * The workflow code, shared: with the SDK's reusable V8 context every workflow otherwise evaluates
 * each module it imports again when it is created (its own module cache). Preloaded, a module is
 * evaluated once per workflow thread, before any workflow exists, and its exports are shared,
 * frozen, by every workflow of that thread: each run keeps only what its workflow function makes.
 * The entry point brings every module the workflows import (workflows/, contracts/, domain/,
 * @temporalio/workflow, the hash library); only the tracing interceptor (workflows/tracing.ts,
 * which loads OpenTelemetry per workflow) stays per workflow. So none of them may hold state at
 * module level, nor read a clock or randomness at load (the SDK's Date and Math.random throw
 * outside a workflow, so such a module fails the worker's start): test/unit/workflow-imports.test.ts
 * follows them. Per open run this saves about a third of its JavaScript heap (docs/decisions/0108).
 */
export const SHARED_WORKFLOW_MODULES: readonly string[] = ['../workflows'].map((m) => require.resolve(m));

/** Per process: bundles already made (or being made), by their options. */
const bundles = new Map<string, Promise<string>>();

/**
 * Bundles the workflow code in a short-lived child process and returns the bundle. Bundling in
 * the worker itself (what `workflowsPath` does) loads webpack into the process and leaves its
 * heap resident for the worker's whole life: about 65 MB of RSS for nothing. A process that
 * starts several workers bundles each set of options once.
 */
export function bundleInChild(options: BundleOptions): Promise<string> {
  const key = JSON.stringify(options);
  let bundle = bundles.get(key);
  if (!bundle) {
    const dir = envSettingsOf(WORKFLOW_BUNDLE_SETTINGS).TEST_WORKFLOW_BUNDLE_DIR;
    bundle = dir === undefined ? runBundler(key) : sharedBundle(dir, key);
    bundles.set(key, bundle);
    // A failed bundle is not kept: the next caller tries again.
    bundle.catch(() => bundles.delete(key));
  }
  return bundle;
}

/** The bundle of `options` from `dir` when a process wrote it there, else made and written there (whole or not at all). */
async function sharedBundle(dir: string, options: string): Promise<string> {
  const file = path.join(dir, `${createHash('sha256').update(options).digest('hex')}.js`);
  const kept = await readFile(file, 'utf8').catch(() => undefined);
  if (kept !== undefined) return kept;
  const code = await runBundler(options);
  const partial = `${file}.${process.pid}.partial`;
  await writeFile(partial, code);
  await rename(partial, file);
  return code;
}

function runBundler(options: string): Promise<string> {
  const script = `
    const { bundleWorkflowCode, DefaultLogger } = require(${JSON.stringify(require.resolve('@temporalio/worker'))});
    bundleWorkflowCode({ ...JSON.parse(process.argv[1]), logger: new DefaultLogger('WARN') })
      .then(({ code }) => process.stdout.write(code), (err) => { console.error(err); process.exit(1); });`;
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['-e', script, options], { maxBuffer: 256 * 1024 * 1024, encoding: 'utf8' }, (err, stdout, stderr) => {
      if (err) reject(new Error(`bundling the workflow code failed: ${err.message}\n${stderr.slice(-2000)}`));
      else resolve(stdout);
    });
  });
}
