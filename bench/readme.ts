import { readFileSync, writeFileSync } from 'node:fs';

// `npm run bench -- --readme`: puts the tables of this run into the README, between the markers
// below (inside the performance section), and touches nothing else of the file.

const START = '<!-- bench-table:start -->';
const END = '<!-- bench-table:end -->';

/** Replaces what lies between the bench-table markers of `file` with `tables`; false if the markers are missing. */
export function writeReadmeTables(file: string, tables: string): boolean {
  const text = readFileSync(file, 'utf8');
  const start = text.indexOf(START);
  const end = text.indexOf(END);
  if (start < 0 || end < start) return false;
  writeFileSync(file, `${text.slice(0, start + START.length)}\n${tables}\n${text.slice(end)}`);
  return true;
}
