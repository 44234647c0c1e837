import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { listeningUrl, type ApplyRequest, type ListResponse, type WhitelistChange } from '../../contracts/storage-node-protocol';
import { signedHeaders, testNodeKeysFile } from '../support/node-keys';

/** The compiled entry point, next to this file's compiled copy in dist/. */
export const MAIN_JS = path.resolve(__dirname, '../../storage-node/main.js');
/** The test build of the node, with faults (test/support/faulty-storage-node.ts). */
export const FAULTY_JS = path.resolve(__dirname, '../support/faulty-storage-node.js');

export interface NodeProcess {
  child: ChildProcess;
  pid: number;
  url: string;
  /** Everything written to stdout / stderr so far. */
  stdout: () => string;
  stderr: () => string;
  /** Resolves with the exit code (or signal) once the process is gone. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const running = new Set<ChildProcess>();

/**
 * Spawns the real compiled node on `dataDir` with `--port 0` and the test keys and resolves once
 * it printed its listening line (a `--keys-file` in `extraArgs` wins: the last one counts); `script`
 * is the test build (FAULTY_JS) for a node with faults.
 * Rejects with its stderr when it exits first or takes over 10 s.
 */
export function startNode(dataDir: string, extraArgs: string[] = [], script = MAIN_JS): Promise<NodeProcess> {
  const child = spawn(process.execPath, [script, '--port', '0', '--data', dataDir, '--keys-file', testNodeKeysFile(), ...extraArgs], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    }),
  );
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`storage node did not start in 10 s: ${out}${err}`)), 10_000);
    const onData = () => {
      // Whole lines only: the last one may still be arriving.
      const url = out
        .split('\n')
        .slice(0, -1)
        .map(listeningUrl)
        .find((u) => u !== undefined);
      if (!url) return;
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      resolve({ child, pid: child.pid!, url, stdout: () => out, stderr: () => err, exited });
    };
    child.stdout!.on('data', onData);
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`storage node exited (${code ?? signal}) before listening: ${out}${err}`));
    });
  });
}

/** SIGKILLs the node (no chance to flush or close anything) and waits until it is reaped. */
export async function kill9(node: NodeProcess): Promise<void> {
  process.kill(node.pid, 'SIGKILL');
  await node.exited;
}

/** Kills every node still running; for `afterEach`. */
export async function killAll(): Promise<void> {
  await Promise.all(
    [...running].map((child) => {
      const gone = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      return gone;
    }),
  );
}

/** A fresh, empty data directory under the OS temp dir. */
export function tempDataDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'storage-node-test-'));
}

export interface HttpAnswer {
  status: number;
  text: string;
  json: () => any;
}

/** Sends one request, signed with the test keys, and reads the whole answer. */
export async function request(url: string, init: { method?: string; body?: string | Uint8Array } = {}): Promise<HttpAnswer> {
  const method = init.method ?? 'GET';
  const res = await fetch(url, { method, body: init.body, headers: signedHeaders(method, url, init.body) });
  const text = await res.text();
  return { status: res.status, text, json: () => JSON.parse(text) };
}

/** `POST /v1/whitelists/apply` with a JSON body. */
export function apply(node: NodeProcess, body: ApplyRequest | unknown): Promise<HttpAnswer> {
  return request(`${node.url}/v1/whitelists/apply`, { method: 'POST', body: JSON.stringify(body) });
}

/** Every entry of `GET /v1/whitelists/{kind}`, following `next` page by page. */
export async function list(node: NodeProcess, kind: string): Promise<string[]> {
  const entries: string[] = [];
  for (let after: string | undefined; ;) {
    const answer = await request(`${node.url}/v1/whitelists/${kind}${after === undefined ? '' : `?after=${encodeURIComponent(after)}`}`);
    if (answer.status !== 200) throw new Error(`list ${kind}: ${answer.status} ${answer.text}`);
    const page = answer.json() as ListResponse;
    entries.push(...page.entries);
    if (page.next === undefined) return entries;
    after = page.next;
  }
}

export const add = (kind: WhitelistChange['kind'], entry: string): WhitelistChange => ({ op_type: 'add_entry', kind, entry });
export const remove = (kind: WhitelistChange['kind'], entry: string): WhitelistChange => ({
  op_type: 'remove_entry',
  kind,
  entry,
});
