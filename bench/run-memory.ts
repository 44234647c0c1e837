import { randomBytes, randomUUID } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import v8 from 'node:v8';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { freePort } from '../config/free-port';
import { readDevServerSettings, startDevServer } from '../scripts/lib/temporal-dev-server';
import { temporalBinary } from '../scripts/lib/temporal-binary';
import { bundleInChild, SHARED_WORKFLOW_MODULES } from '../worker/workflow-bundle';
import { WORKFLOW_INTERCEPTOR_MODULES, workflowSinks } from '../worker/tracing';
import {
  EXECUTION_WORKFLOW_TYPE,
  executionWorkflowId,
  getExecutionQuery,
  recordDepositUpdate,
  type ExecutionWorkflowInput,
} from '../contracts/temporal';

const USAGE = `npm run bench:run-memory [-- --runs N] [--preload MODULE] [--snapshot DIR]
  What one open execution costs the worker's JavaScript heap: one Worker in this process with its
  workflows in this thread (debugMode: the same reusable V8 context as in production, but beside
  the SDK's per-run state of the main thread, so both are counted), against a dev server of its
  own; N execution workflows started (half of them deposited), the heap read after full GCs before
  and after; prints KB per run (JavaScript heap, its spaces, RSS) and the modules each run
  evaluates for itself.
  --runs      open executions (default 300)
  --preload   one more module to preload beside SHARED_WORKFLOW_MODULES (a path from dist/bench, e.g. ../workflows); repeatable
  --snapshot  write heap snapshots (idle.heapsnapshot, held.heapsnapshot) into DIR`;

const say = (line: string) => process.stderr.write(`[run-memory] ${line}\n`);

function heap(): { used: number; external: number; rss: number; spaces: Record<string, number> } {
  for (let i = 0; i < 3; i++) (globalThis as { gc?: () => void }).gc?.();
  const spaces: Record<string, number> = {};
  for (const s of v8.getHeapSpaceStatistics()) spaces[s.space_name] = s.space_used_size;
  const m = process.memoryUsage();
  return { used: v8.getHeapStatistics().used_heap_size, external: m.external, rss: m.rss, spaces };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      runs: { type: 'string', default: '300' },
      snapshot: { type: 'string' },
      preload: { type: 'string', multiple: true, default: [] },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) return void console.log(USAGE);
  if (!(globalThis as { gc?: unknown }).gc) throw new Error('run with node --expose-gc');
  const runs = Number(values.runs);
  Runtime.install({ logger: new (await import('@temporalio/worker')).DefaultLogger('WARN') });
  const port = await freePort();
  const server = await startDevServer(
    temporalBinary(),
    readDevServerSettings({ port, uiPort: port + 1, headless: true, dbFilename: undefined, logLevel: 'error', dynamicConfig: {} }),
  );
  try {
    const code = await bundleInChild({
      workflowsPath: require.resolve('../workflows'),
      workflowInterceptorModules: [...WORKFLOW_INTERCEPTOR_MODULES],
      preloadModules: [...SHARED_WORKFLOW_MODULES, ...values.preload!.map((m) => require.resolve(m))],
    });
    const connection = await NativeConnection.connect({ address: server.address });
    const taskQueue = `run-memory-${process.pid}`;
    const worker = await Worker.create({
      connection,
      taskQueue,
      workflowBundle: { code },
      activities: { projectExecution: async () => undefined, checkDeposit: async () => ({ ok: false, retryable: false }) },
      sinks: workflowSinks(undefined),
      maxCachedWorkflows: runs + 20,
      // Workflows in this thread, so that this process's heap holds them (the context is the same reusable one).
      debugMode: true,
    });
    const client = new Client({ connection: await Connection.connect({ address: server.address }) });
    const running = worker.run();
    const start = async (n: number) => {
      for (let i = 0; i < n; i++) {
        const executionId = randomUUID();
        const input: ExecutionWorkflowInput = {
          executionId,
          wallet: 'wallet',
          intent: { swap: 'USDC->ETH', amount: '10' },
          intentHash: 'f'.repeat(64),
          signerPublicKey: `0x${'1'.repeat(64)}`,
          createdAt: new Date().toISOString(),
          expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
          lingerSeconds: 0,
        };
        const workflowId = executionWorkflowId('wallet', executionId);
        const handle = await client.workflow.start(EXECUTION_WORKFLOW_TYPE, { taskQueue, workflowId, args: [input] });
        // Half deposited (OPERATION_PENDING), half read, as bench:capacity leaves them.
        if (i % 2 === 0) await handle.executeUpdate(recordDepositUpdate, { args: [{ txHash: `0x${randomBytes(32).toString('hex')}` }] });
        else await handle.query(getExecutionQuery);
      }
    };
    // Warm-up: the functions a run uses are compiled once, for every later run.
    await start(10);
    await new Promise((r) => setTimeout(r, 1000));
    const idle = heap();
    say(`idle: ${(idle.used / 2 ** 20).toFixed(1)} MB of JavaScript heap; starting ${runs} executions`);
    if (values.snapshot) v8.writeHeapSnapshot(path.join(values.snapshot, 'idle.heapsnapshot'));
    await start(runs);
    await new Promise((r) => setTimeout(r, 1000));
    const held = heap();
    if (values.snapshot) v8.writeHeapSnapshot(path.join(values.snapshot, 'held.heapsnapshot'));
    const cached = worker.getStatus().numCachedWorkflows;
    // The modules each run evaluates for itself (the SDK's per-run module cache): the rest are shared.
    const sdkVm = path.join(path.dirname(require.resolve('@temporalio/worker')), 'workflow', 'reusable-vm.js');
    const { ReusableVMWorkflowCreator } = require(sdkVm) as {
      ReusableVMWorkflowCreator: { workflowByRunId: Map<string, { activator: { moduleCache: Map<string, unknown> } }> };
    };
    const [one] = ReusableVMWorkflowCreator.workflowByRunId.values();
    const perRunModules = [...one.activator.moduleCache.keys()];
    const kb = (b: number) => Math.round(b / 1024 / runs);
    const spaces = Object.fromEntries(Object.keys(held.spaces).map((k) => [k, kb(held.spaces[k] - (idle.spaces[k] ?? 0))]));
    console.log(
      JSON.stringify(
        {
          date: new Date().toISOString(),
          node: process.version,
          cpus: os.cpus().length,
          runs,
          cached,
          perRunModules,
          kbPerRun: {
            jsHeap: kb(held.used - idle.used),
            external: kb(held.external - idle.external),
            rss: kb(held.rss - idle.rss),
            spaces,
          },
        },
        null,
        2,
      ),
    );
    worker.shutdown();
    await running;
    await connection.close();
  } finally {
    await server.stop();
  }
}

main().catch((err) => {
  console.error('run-memory failed:', err);
  process.exit(1);
});
