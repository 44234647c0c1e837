import path from 'node:path';

/** The project's root folder (config paths such as `data/tokens.json` are relative to it). */
export const projectRoot = path.resolve(__dirname, '..', '..');
