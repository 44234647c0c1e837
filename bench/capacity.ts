import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { newWallet, sampleIntent, signedBody, type TestWallet } from '../scripts/lib/wallets';
import { request, requestRetrying503 } from '../scripts/lib/http-request';
import { ProcessStack } from '../scripts/lib/stack/process-stack';

const USAGE = `npm run bench:capacity [-- --cache N] [--seconds S] [--clients C]
  --cache    WORKER_CACHED_WORKFLOWS of the one worker; it takes 0.9 of it (WORKER_OPEN_RUNS unset) and the API admits that (CAPACITY_OPEN_RUNS unset), as the defaults (default 400)
  --seconds  how long the service is kept at its capacity while executions are signed and new ones prepared (default 60)
  --clients  concurrent clients (default 20)`;

const t0 = Date.now();
const say = (line: string) =>
  process.stderr.write(`[bench:capacity ${String(Math.round((Date.now() - t0) / 1000)).padStart(3)} s] ${line}\n`);

interface Open {
  wallet: TestWallet;
  executionId: string;
  intent: unknown;
  deposited?: boolean;
}

/** The median VmRSS of a process over `samples` reads a second apart, MB: one read lands anywhere in its garbage collector's cycle. */
async function settledRssMb(pid: number, samples = 10): Promise<number> {
  const reads: number[] = [];
  for (let i = 0; i < samples; i++) {
    if (i > 0) await new Promise((r) => setTimeout(r, 1000));
    reads.push(memoryMb(pid).rss);
  }
  return reads.sort((a, b) => a - b)[Math.floor(samples / 2)];
}

/** VmRSS and VmHWM of a process, MB. */
function memoryMb(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

/**
 * The capacity of one worker at the defaults' ratio (docs/performance.md "Capacity"): fills the
 * service to CAPACITY_OPEN_RUNS with executions (half of them deposited, so OPERATION_PENDING, as
 * executions waiting for their signature are), reads the worker's memory per open run, then keeps
 * it at its capacity for `seconds`: each client signs an open execution (which closes it) and
 * prepares a new one until it is admitted. Prepares admitted per second there is the sustained rate
 * when executions are signed as soon as they are prepared; with executions that stay open, it is
 * the open runs over how long they stay open.
 */
async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      cache: { type: 'string', default: '400' },
      seconds: { type: 'string', default: '60' },
      clients: { type: 'string', default: '20' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) return void console.log(USAGE);
  const cache = Number(values.cache);
  // The defaults' bound (decision 0107): the worker takes nine tenths of its cache and announces it;
  // with one worker the API admits that.
  const capacity = Math.floor(0.9 * cache);
  const seconds = Number(values.seconds);
  const clients = Number(values.clients);
  const stack = await new ProcessStack({
    // Empty: unset, the defaults (the stacks' own settings turn both bounds off).
    env: { WORKER_CACHED_WORKFLOWS: String(cache), WORKER_OPEN_RUNS: '', CAPACITY_OPEN_RUNS: '', ENVELOPE_MAX_AGE_S: '86400' },
  }).start();
  try {
    const pid = stack.worker!.child.pid!;
    // Past the start's own garbage, and the worker's first announcement of its bound (every 5 s).
    await new Promise((r) => setTimeout(r, 15_000));
    const idle = { rss: await settledRssMb(pid) };
    say(`worker idle: ${idle.rss.toFixed(0)} MB (median of 10 reads); cache ${cache}, capacity ${capacity}`);

    let refused = 0;
    /** Prepares one new execution; undefined when refused CAPACITY_FULL. */
    const prepareOne = async (): Promise<Open | undefined> => {
      const entry = { wallet: newWallet(), executionId: `cap-${randomUUID()}`, intent: sampleIntent() };
      const answer = await request(stack.apiUrl, 'POST', `/api/v1/executions/${entry.wallet.id}`, {
        token: stack.token,
        json: { executionId: entry.executionId, intent: entry.intent },
      });
      if (answer.status === 503 && answer.body?.code === 'CAPACITY_FULL') {
        refused++;
        return undefined;
      }
      if (answer.status !== 201) throw new Error(`prepare: ${answer.status} ${answer.text}`);
      return entry;
    };
    const path = (e: Open) => `/api/v1/executions/${e.wallet.id}/${e.executionId}`;
    const deposit = async (e: Open) => {
      // A 503 other than CAPACITY_FULL (an outcome unknown under load) is sent again, as a client does.
      const answer = await requestRetrying503(stack.apiUrl, 'POST', `${path(e)}/deposit`, {
        token: stack.token,
        json: { txHash: `0x${randomBytes(32).toString('hex')}` },
      });
      if (answer.status !== 200) throw new Error(`deposit: ${answer.status} ${answer.text}`);
      e.deposited = true;
    };

    // Fill: prepares until the first refusal, then every execution read (cached) and half deposited.
    const open: Open[] = [];
    const fillStarted = Date.now();
    let full = false;
    await Promise.all(
      Array.from({ length: clients }, async () => {
        while (!full) {
          const e = await prepareOne();
          if (e) open.push(e);
          else full = true;
        }
      }),
    );
    const fillSeconds = (Date.now() - fillStarted) / 1000;
    const filled = open.length;
    say(`filled: ${open.length} admitted in ${fillSeconds.toFixed(1)} s (${(open.length / fillSeconds).toFixed(1)} prepares/s)`);
    const queue = [...open];
    await Promise.all(
      Array.from({ length: clients }, async () => {
        for (let e = queue.pop(); e; e = queue.pop()) {
          await requestRetrying503(stack.apiUrl, 'GET', path(e));
          if (open.indexOf(e) % 2 === 0) await deposit(e);
        }
      }),
    );
    await new Promise((r) => setTimeout(r, 5000));
    const held = { rss: await settledRssMb(pid) };
    const perRun = (held.rss - idle.rss) / filled;
    say(
      `worker holding ${filled} open runs: ${held.rss.toFixed(0)} MB (median of 10 reads; ${(perRun * 1024).toFixed(0)} KB a run, ${Math.round(1024 / perRun)} runs per GB above idle)`,
    );

    // At capacity: sign one, prepare one.
    let signed = 0;
    let admitted = 0;
    refused = 0;
    const deadline = Date.now() + seconds * 1000;
    const turnStarted = Date.now();
    await Promise.all(
      Array.from({ length: clients }, async () => {
        while (Date.now() < deadline) {
          const e = open.shift();
          if (!e) break;
          if (!e.deposited) await deposit(e);
          const answer = await requestRetrying503(stack.apiUrl, 'POST', `/api/v1/executions/${e.wallet.id}/submit`, {
            json: signedBody(e.wallet, e.executionId, e.intent),
          });
          if (answer.status !== 200 && answer.status !== 409) throw new Error(`submit: ${answer.status} ${answer.text}`);
          signed++;
          for (;;) {
            const next = await prepareOne();
            if (next) {
              admitted++;
              // Half wait for their signature, as in the fill.
              if (admitted % 2 === 0) await deposit(next);
              open.push(next);
              break;
            }
            if (Date.now() > deadline) break;
            await new Promise((r) => setTimeout(r, 100));
          }
        }
      }),
    );
    const turnSeconds = (Date.now() - turnStarted) / 1000;
    const end = memoryMb(pid);
    const result = {
      date: new Date().toISOString(),
      cpus: os.cpus().length,
      memoryGb: Math.round(os.totalmem() / 2 ** 30),
      cache,
      capacity,
      filled: { admitted: filled, seconds: fillSeconds, preparesPerSecond: filled / fillSeconds },
      worker: { idleMb: idle.rss, holdingMb: held.rss, kbPerOpenRun: perRun * 1024, runsPerGbAboveIdle: 1024 / perRun, peakMb: end.peak },
      atCapacity: { seconds: turnSeconds, signed, admitted, refused, preparesPerSecond: admitted / turnSeconds },
    };
    console.log(JSON.stringify(result, null, 2));
  } finally {
    await stack.stop();
  }
}

main().catch((err) => {
  console.error('bench:capacity failed:', err);
  process.exit(1);
});
