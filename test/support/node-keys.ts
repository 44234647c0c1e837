import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createNodeTransport, type NodeTransport } from '../../activities/node-transport';
import { createNodeKeysFile, readNodeKeysFile } from '../../lib/node-keys-file';
import { nodeOf, signRequest, type NodeKeys } from '../../lib/node-request-auth';

/**
 * The storage node keys of this test process: one keys file, created on first use the way
 * `npm start` creates it and removed at exit, for every node, API and worker the tests start, so
 * that a test can sign its own requests to any of them. There is no unsigned mode to fall back on.
 */
let state: { file: string; keys: NodeKeys; transport: NodeTransport } | undefined;

function testKeys(): NonNullable<typeof state> {
  if (state) return state;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'intent-service-node-keys-'));
  const file = path.join(dir, 'storage-node-keys');
  createNodeKeysFile(file);
  process.once('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  const keys = readNodeKeysFile(file);
  state = { file, keys, transport: createNodeTransport({ keys }) };
  return state;
}

/** The keys file's path: `--keys-file` of the nodes, STORAGE_NODE_KEYS_FILE of the APIs and workers. */
export const testNodeKeysFile = (): string => testKeys().file;

export const testNodeKeys = (): NodeKeys => testKeys().keys;

/** A transport (activities/node-transport.ts) that signs with the test keys. */
export const testNodeTransport = (): NodeTransport => testKeys().transport;

/** The headers that sign one request to `url` (for its node, over its path and query) with the test keys, as the service signs it. */
export function signedHeaders(method: string, url: string, body: string | Uint8Array = ''): Record<string, string> {
  const { pathname, search } = new URL(url);
  return signRequest(testKeys().keys, { method, node: nodeOf(url), target: `${pathname}${search}`, body });
}
