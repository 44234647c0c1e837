import path from 'node:path';
import { projectRoot } from '../config/config';
import { renderSettingsTable } from '../config/settings';
import { writeDocSection } from './lib/doc-section';

/** `npm run docs:settings`: renders config/settings.ts into docs/operations.md "Configuration". */
const file = path.join(projectRoot, 'docs', 'operations.md');
if (!writeDocSection(file, 'settings-table', renderSettingsTable())) {
  console.error(`${file} has no settings-table markers`);
  process.exit(1);
}
console.log(`wrote the settings table into ${path.relative(projectRoot, file)}`);
