import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import path from 'node:path';
import { projectRoot } from '../config/config';
import { unflooredFolders, upwardImports } from './lib/floors';
import { checkWorkflowImports, unrecordedPatchCalls } from './lib/workflow-imports';

// npm run lint: no import climbs the house (scripts/lib/floors.ts); the workflow code's imports
// (scripts/lib/workflow-imports.ts); no patch branch without a decision record that names it and
// its removal; then Temporal's own bundler over the workflows, which refuses modules that are not
// allowed in the workflow sandbox.

async function main(): Promise<void> {
  const unfloored = unflooredFolders(projectRoot);
  for (const f of unfloored) console.error(`folder without a floor: ${f}/ (give it one in scripts/lib/floors.ts)`);
  const upward = upwardImports(projectRoot);
  for (const u of upward)
    console.error(`upward import: ${u.file} imports ${u.target} (a higher floor, or a neighbour it may not use: scripts/lib/floors.ts)`);
  const problems = checkWorkflowImports(projectRoot);
  for (const p of problems) console.error(`workflow import: ${p}`);
  const patches = unrecordedPatchCalls(projectRoot);
  for (const p of patches)
    console.error(
      `workflow patch: ${p}: ship a workflow change as a new worker version (decision 0068), or name this patch id in a decision record with when it will be removed (deprecatePatch, then removal)`,
    );
  if (unfloored.length > 0 || upward.length > 0 || problems.length > 0 || patches.length > 0) process.exit(1);
  // With the workflow interceptor module every worker bundles (worker/tracing.ts).
  await bundleWorkflowCode({
    workflowsPath: path.join(projectRoot, 'dist', 'workflows', 'index.js'),
    workflowInterceptorModules: [path.join(projectRoot, 'dist', 'workflows', 'tracing.js')],
    logger: new DefaultLogger('WARN'),
  });
  console.log('floors: no import climbs; workflows: imports are workflow-safe and the bundle builds');
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
