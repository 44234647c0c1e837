import { readFileSync, writeFileSync } from 'node:fs';

// Generated parts of the docs live between `<!-- NAME:start -->` and `<!-- NAME:end -->`; the
// writers below replace only that part of the file.

const markers = (name: string) => [`<!-- ${name}:start -->`, `<!-- ${name}:end -->`] as const;

/** What lies between the markers `name` in `text` (trimmed), or undefined when they are missing. */
export function docSection(text: string, name: string): string | undefined {
  const [START, END] = markers(name);
  const start = text.indexOf(START);
  const end = text.indexOf(END);
  if (start < 0 || end < start) return undefined;
  return text.slice(start + START.length, end).trim();
}

/** Replaces what lies between the markers `name` of `file` with `body`; false if the markers are missing. */
export function writeDocSection(file: string, name: string, body: string): boolean {
  const [START, END] = markers(name);
  const text = readFileSync(file, 'utf8');
  const start = text.indexOf(START);
  const end = text.indexOf(END);
  if (start < 0 || end < start) return false;
  writeFileSync(file, `${text.slice(0, start + START.length)}\n${body.trim()}\n${text.slice(end)}`);
  return true;
}
