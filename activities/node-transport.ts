import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { readNodeKeysFile } from '../lib/node-keys-file';
import { nodeOf, signRequest, type NodeKeys } from '../lib/node-request-auth';

/**
 * What a process needs to talk to the storage nodes, built once at start-up and shared by every
 * request: the deployment's keys (each request is signed, docs/decisions/0060) and keep-alive
 * connections, over https verified against the configured CA when a node's URL says https.
 */
export interface NodeTransport {
  /** The headers that sign one request to `url`: for the node it addresses, over its path with the query. */
  sign(method: string, url: URL, body: string): Record<string, string>;
  /** The keep-alive agent for a URL's protocol (`http:` / `https:`); undefined for any other. */
  agent(protocol: string): http.Agent | undefined;
}

/** A transport from keys in hand; `ca` (PEM) replaces the system roots for https nodes. */
export function createNodeTransport(options: { keys: NodeKeys; ca?: string | Buffer }): NodeTransport {
  const agents: Record<string, http.Agent> = {
    'http:': new http.Agent({ keepAlive: true }),
    'https:': new https.Agent({ keepAlive: true, ...(options.ca === undefined ? {} : { ca: options.ca }) }),
  };
  return {
    // Signed over the request target as node:http sends it for a URL: its path and query.
    sign: (method, url, body) => signRequest(options.keys, { method, node: nodeOf(url), target: `${url.pathname}${url.search}`, body }),
    agent: (protocol) => agents[protocol],
  };
}

/**
 * A transport from the configured files (STORAGE_NODE_KEYS_FILE, STORAGE_NODE_CA_FILE). Throws
 * an Error naming the file when one cannot be read, so a process without them does not start.
 */
export function loadNodeTransport(files: { storageNodeKeysFile: string; storageNodeCaFile?: string }): NodeTransport {
  const keys = readNodeKeysFile(files.storageNodeKeysFile);
  let ca: Buffer | undefined;
  if (files.storageNodeCaFile !== undefined) {
    try {
      ca = readFileSync(files.storageNodeCaFile);
    } catch (err) {
      throw new Error(`cannot read STORAGE_NODE_CA_FILE ${files.storageNodeCaFile}: ${(err as Error).message}`);
    }
  }
  return createNodeTransport({ keys, ca });
}
