import { execFile } from 'node:child_process';

export interface BundleOptions {
  workflowsPath: string;
  workflowInterceptorModules?: string[];
  payloadConverterPath?: string;
  failureConverterPath?: string;
  ignoreModules?: string[];
}

/** Per process: bundles already made (or being made), by their options. */
const bundles = new Map<string, Promise<string>>();

/**
 * Bundles the workflow code in a short-lived child process and returns the bundle. Bundling in
 * the worker itself (what `workflowsPath` does) loads webpack into the process and leaves its
 * heap resident for the worker's whole life: about 65 MB of RSS for nothing. A process that
 * starts several workers (the API's batch worker in tests) bundles each set of options once.
 */
export function bundleInChild(options: BundleOptions): Promise<string> {
  const key = JSON.stringify(options);
  let bundle = bundles.get(key);
  if (!bundle) {
    bundle = runBundler(key);
    bundles.set(key, bundle);
    // A failed bundle is not kept: the next caller tries again.
    bundle.catch(() => bundles.delete(key));
  }
  return bundle;
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
