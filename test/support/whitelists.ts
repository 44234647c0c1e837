import { randomBytes } from 'node:crypto';
import { FAULTS_ROUTE, FAULTY_NODE_SCRIPT, type FaultSettings } from './faulty-storage-node';
import path from 'node:path';
import { toChecksumAddress } from '../../domain/eoa';
import { ownerOf } from '../../domain/rendezvous';
import { ownerKey, type WhitelistChange, type WhitelistKind } from '../../domain/whitelist-messages';
import { startStorageNode } from '../../scripts/lib/storage-nodes';
import type { ListResponse } from '../../contracts/storage-node-protocol';
import { request } from './http';
import { signedHeaders } from './node-keys';
import type { Stack } from './stack';

export const randomEoa = () => '0x' + randomBytes(20).toString('hex');

/** A change whose entry is owned by `node` (rendezvous hashing over the stack's nodes). */
export function changeOwnedBy(
  stack: Stack,
  node: string,
  op_type: WhitelistChange['op_type'] = 'add_entry',
  kind: WhitelistKind = 'developer',
): WhitelistChange {
  const urls = stack.nodes.map((n) => n.url);
  for (;;) {
    const entry = toChecksumAddress(randomEoa());
    const change = { op_type, kind, entry };
    if (ownerOf(ownerKey(change), urls) === node) return change;
  }
}

export function postBatch(stack: Stack, body: unknown, options: { token?: string; headers?: Record<string, string>; raw?: string } = {}) {
  return request(stack.api.url, 'POST', '/chain/whitelists/', {
    token: options.token ?? stack.tokens.all,
    json: options.raw === undefined ? body : undefined,
    body: options.raw,
    headers: { 'content-type': 'application/json', ...(options.headers ?? {}) },
  });
}

/** The entries one storage node holds for a kind, read through its own paginated GET. */
export async function nodeEntries(node: string, kind: WhitelistKind): Promise<string[]> {
  const entries: string[] = [];
  for (let after: string | undefined; ;) {
    const url = `${node}/v1/whitelists/${kind}${after === undefined ? '' : `?after=${encodeURIComponent(after)}`}`;
    const res = await fetch(url, { headers: signedHeaders('GET', url) });
    if (!res.ok) throw new Error(`${node} answered ${res.status}`);
    const page = (await res.json()) as ListResponse;
    entries.push(...page.entries);
    if (page.next === undefined) return entries;
    after = page.next;
  }
}

/** Changes the faults of a node of the test build (test/support/faulty-storage-node.ts). */
export async function setFault(node: string, settings: Partial<FaultSettings>): Promise<void> {
  const url = `${node}${FAULTS_ROUTE}`;
  const body = JSON.stringify(settings);
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...signedHeaders('POST', url, body) },
    body,
  });
  if (!res.ok) throw new Error(`fault API of ${node} answered ${res.status}`);
}

/** Restarts node `index` of the stack on the same port and data folder (after a kill). */
export async function restartNode(stack: Stack, index: number): Promise<void> {
  const old = stack.nodes[index];
  await old.stop(2000);
  const port = Number(new URL(old.url).port);
  stack.nodes[index] = await startStorageNode(old.name, {
    port,
    dataDir: path.join(stack.tmpDir, `node-${index + 1}`),
    keysFile: stack.config.storageNodeKeysFile,
    echo: false,
    script: FAULTY_NODE_SCRIPT,
  });
}
