import { readFileSync, writeFileSync } from 'node:fs';

// `npm run bench -- --docs`: puts the tables of this run into docs/performance.md, between the
// markers below, and touches nothing else of the file.

const START = '<!-- bench-table:start -->';
const END = '<!-- bench-table:end -->';

/** Replaces what lies between the bench-table markers of `file` with `tables`; false if the markers are missing. */
export function writeBenchTables(file: string, tables: string): boolean {
  const text = readFileSync(file, 'utf8');
  const start = text.indexOf(START);
  const end = text.indexOf(END);
  if (start < 0 || end < start) return false;
  writeFileSync(file, `${text.slice(0, start + START.length)}\n${tables}\n${text.slice(end)}`);
  return true;
}
