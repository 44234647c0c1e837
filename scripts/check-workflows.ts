import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import path from 'node:path';
import { projectRoot } from '../config/config';
import { checkWorkflowImports, unrecordedPatchCalls } from './lib/workflow-imports';

// npm run lint: the workflow code's imports (scripts/lib/workflow-imports.ts), no patch branch
// without a decision record that names it and its removal, then Temporal's own bundler over it,
// which refuses modules that are not allowed in the workflow sandbox.

async function main(): Promise<void> {
  const problems = checkWorkflowImports(projectRoot);
  for (const p of problems) console.error(`workflow import: ${p}`);
  const patches = unrecordedPatchCalls(projectRoot);
  for (const p of patches)
    console.error(
      `workflow patch: ${p}: ship a workflow change as a new worker version (decision 0068), or name this patch id in a decision record with when it will be removed (deprecatePatch, then removal)`,
    );
  if (problems.length > 0 || patches.length > 0) process.exit(1);
  await bundleWorkflowCode({ workflowsPath: path.join(projectRoot, 'dist', 'workflows', 'index.js'), logger: new DefaultLogger('WARN') });
  console.log('workflows: imports are workflow-safe and the bundle builds');
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
