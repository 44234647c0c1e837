import { SETTINGS } from './settings';
import type { Row, SettingsTable, Spec } from './setting-row';

/**
 * The Markdown tables of the settings, rendered from the tables themselves (`npm run
 * docs:settings` writes them into docs/; a unit test fails when the docs differ).
 */

function typeText(spec: Spec): string {
  switch (spec.kind) {
    case 'integer':
      return spec.max === undefined ? `integer ≥ ${spec.min}` : `integer ${spec.min}–${spec.max}`;
    case 'integer-or-off':
      return `integer ${spec.min}–${spec.max} or \`off\``;
    case 'number':
      return `number ≥ ${spec.min}`;
    case 'string':
      return 'string';
    case 'list':
      return 'comma-separated list';
    case 'flag':
      return '`1` / `0`';
    case 'enum':
      return spec.values.map((v) => `\`${v}\``).join(', ');
  }
}

function defaultText(row: Row): string {
  if (row.defaultText) return row.defaultText;
  if (!('default' in row) || row.default === undefined) return 'unset';
  if (Array.isArray(row.default)) return row.default.length === 0 ? 'none' : row.default.map((v) => `\`${v}\``).join(', ');
  return `\`${String(row.default)}\``;
}

const cell = (s: string) => s.replace(/\|/g, '\\|');

/** The Markdown table of docs/configuration.md "Settings": the service's settings. */
export function renderSettingsTable(): string {
  const lines = ['| variable | `config/service.json` key | type | default | read by | what |', '|---|---|---|---|---|---|'];
  for (const [name, row] of Object.entries(SETTINGS) as [string, Row][]) {
    lines.push(
      `| \`${name}\` | ${row.file ? `\`${row.file}\`` : ''} | ${cell(typeText(row))} | ${cell(defaultText(row))} | ${row.readBy} | ${cell(row.description)} |`,
    );
  }
  return lines.join('\n') + '\n';
}

/** The Markdown table of the tools' settings (docs/development.md), from their tables. */
export function renderToolSettingsTable(tables: readonly SettingsTable[]): string {
  const lines = ['| variable | type | default | read by | what |', '|---|---|---|---|---|'];
  for (const table of tables)
    for (const [name, row] of Object.entries(table))
      lines.push(`| \`${name}\` | ${cell(typeText(row))} | ${cell(defaultText(row))} | ${row.readBy} | ${cell(row.description)} |`);
  return lines.join('\n') + '\n';
}
