/**
 * The keys file shared by the storage nodes, the API and the workers: one `whsec_<base64>` key a
 * line, the first one signs (lib/node-request-auth.ts). Read at start-up; created once, on the
 * first run of `npm start` or `npm run cluster`.
 */
import fs from 'node:fs';
import { createSecretFileOnce } from './durable-fs';
import { generateNodeKey, parseNodeKeys, type NodeKeys } from './node-request-auth';

/** Reads and parses the keys file; throws an Error naming the file (never a key) when it cannot. */
export function readNodeKeysFile(file: string): NodeKeys {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`cannot read the storage node keys file ${file}: ${(err as Error).message}`);
  }
  return parseNodeKeys(text, file);
}

/**
 * Creates `file` holding one fresh key, readable by its owner only (0600), unless it exists: an
 * existing file is never replaced, since every node and service of the deployment trusts it.
 * Atomic: the key is written and synced under a temporary name, then hard-linked to `file`, which
 * fails when `file` exists; so a reader never sees a half-written file and two launchers racing
 * keep one key. Returns whether it created the file.
 */
export function createNodeKeysFile(file: string): boolean {
  return createSecretFileOnce(file, () => `${generateNodeKey()}\n`);
}
