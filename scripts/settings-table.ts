import path from 'node:path';
import { projectRoot } from '../config/config';
import { renderSettingsTable, renderToolSettingsTable } from '../config/settings-docs';
import { BENCH_SETTINGS } from '../bench/settings';
import { TEST_SETTINGS } from './lib/test-settings';
import { writeDocSection } from './lib/doc-section';
import { SCRIPT_SETTINGS } from './lib/settings';
import { WORKFLOW_BUNDLE_SETTINGS } from '../worker/workflow-bundle';
import { renderPrepareReference, renderRecordReference } from './lib/record-reference';

/** The tools' tables, in the order docs/development.md lists them. */
export const TOOL_SETTINGS = [SCRIPT_SETTINGS, TEST_SETTINGS, WORKFLOW_BUNDLE_SETTINGS, BENCH_SETTINGS] as const;

/**
 * `npm run docs:settings`: renders config/settings.ts into docs/configuration.md "Settings" and
 * the tools' tables into docs/development.md "Tool settings", the execution record's fields into
 * docs/api-executions.md "The execution record".
 */
function main(): void {
  const targets: Array<[string, string, string]> = [
    ['configuration.md', 'settings-table', renderSettingsTable()],
    ['development.md', 'tool-settings-table', renderToolSettingsTable(TOOL_SETTINGS)],
    ['api-executions.md', 'record-fields', renderRecordReference()],
    ['api-executions.md', 'prepare-fields', renderPrepareReference()],
  ];
  for (const [name, section, text] of targets) {
    const file = path.join(projectRoot, 'docs', name);
    if (!writeDocSection(file, section, text)) {
      console.error(`${file} has no ${section} markers`);
      process.exit(1);
    }
    console.log(`wrote ${section} into ${path.relative(projectRoot, file)}`);
  }
}

if (require.main === module) main();
