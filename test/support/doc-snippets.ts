import { readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../config/config';

/**
 * The fenced blocks of `lang` in the section of docs/`page` whose `## ` heading is `heading`
 * (the whole page without one), in order: what a reader copies.
 */
export function docSnippets(page: string, lang: string, heading?: string): string[] {
  let text = readFileSync(path.join(projectRoot, 'docs', page), 'utf8');
  if (heading !== undefined) {
    const parts = text.split(`\n## ${heading}\n`);
    if (parts.length !== 2) throw new Error(`docs/${page} has no single section "## ${heading}"`);
    text = parts[1].split('\n## ')[0];
  }
  return [...text.matchAll(new RegExp('```' + lang + '\\n([\\s\\S]*?)```', 'g'))].map((m) => m[1]);
}
