/**
 * `npm run bench:node [-- --records N]`: how a storage node restarts with a large audit trail.
 * Fills a data folder with N audit records (default 1,000,000: batches of 100 changes over 10,000
 * entries), then starts the real node process on it and prints a table: time to its listening
 * line, its RSS once listening, the file's size, and an audit query by entry and by token id.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createNodeTransport } from '../activities/node-transport';
import { getJson } from '../activities/http-post';
import { projectRoot } from '../config/config';
import { toChecksumAddress } from '../domain/eoa';
import { createNodeKeysFile, readNodeKeysFile } from '../lib/node-keys-file';
import { DATABASE_FILE } from '../storage-node/node-files';
import { NodeStore } from '../storage-node/node-store';
import { listeningUrl } from '../contracts/storage-node-protocol';

const BATCH = 100;
const ENTRIES = 10_000;

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { records: { type: 'string', default: '1000000' } } });
  const records = Number(values.records);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'node-restart-'));
  const keysFile = path.join(dir, 'keys');
  createNodeKeysFile(keysFile);
  const data = path.join(dir, 'data');
  try {
    const entries = Array.from({ length: ENTRIES }, (_, i) => toChecksumAddress(`0x${(i + 1).toString(16).padStart(40, '0')}`));
    const fill = performance.now();
    const store = NodeStore.open({ dataDir: data });
    for (let b = 0; b * BATCH < records; b++) {
      const changes = Array.from({ length: BATCH }, (_, k) => ({
        op_type: (b + k) % 3 === 0 ? ('remove_entry' as const) : ('add_entry' as const),
        kind: k % 2 ? ('user' as const) : ('developer' as const),
        entry: entries[(b * BATCH + k) % ENTRIES],
      }));
      store.apply({ batchId: `fill-${b}`, position: b + 1, tokenId: `token-${b % 50}`, changes });
      // A running node checkpoints about once a second; this fill does about a hundred applies a second.
      if (b % 100 === 99) store.checkpoint();
    }
    store.close();
    const fillS = (performance.now() - fill) / 1000;
    const sizeMb = fs.statSync(path.join(data, DATABASE_FILE)).size / 2 ** 20;

    const started = performance.now();
    const child = spawn(
      process.execPath,
      [path.join(projectRoot, 'dist', 'storage-node', 'main.js'), '--port', '0', '--data', data, '--keys-file', keysFile],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
        out += chunk;
        const url = out
          .split('\n')
          .slice(0, -1)
          .map(listeningUrl)
          .find((u) => u !== undefined);
        if (url) resolve(url);
      });
      child.once('exit', (code) => reject(new Error(`node exited ${code}`)));
    });
    const startMs = performance.now() - started;
    const rssMb = Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${child.pid}/status`, 'utf8'))![1]) / 1024;
    const transport = createNodeTransport({ keys: readNodeKeysFile(keysFile) });
    const timed = async (query: string) => {
      const t = performance.now();
      const answer = await getJson(`${url}/v1/whitelists/audit?${query}`, { timeoutMs: 30_000, transport });
      if (answer.status !== 200) throw new Error(`audit ${query}: ${answer.status} ${answer.text.slice(0, 200)}`);
      return { ms: performance.now() - t, count: (JSON.parse(answer.text) as { records: unknown[] }).records.length };
    };
    const byEntry = await timed(`entry=${entries[4242]}&limit=100`);
    const byToken = await timed('tokenId=token-7&limit=100');
    const newest = await timed('limit=1000');
    child.kill('SIGTERM');
    console.log(
      `Storage node restart, ${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, Node ${process.version}\n`,
    );
    console.log(
      '| audit records | file MB | fill s | start to listening ms | RSS once listening MB | audit by entry ms (100) | by token ms (100) | newest 1000 ms |',
    );
    console.log('|---|---|---|---|---|---|---|---|');
    console.log(
      `| ${records.toLocaleString('en')} | ${sizeMb.toFixed(0)} | ${fillS.toFixed(1)} | ${startMs.toFixed(0)} | ${rssMb.toFixed(0)} | ${byEntry.ms.toFixed(1)} (${byEntry.count}) | ${byToken.ms.toFixed(1)} (${byToken.count}) | ${newest.ms.toFixed(1)} |`,
    );
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: Error) => {
  console.error(err.stack ?? err.message);
  process.exit(1);
});
