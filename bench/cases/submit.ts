import { randomUUID } from 'node:crypto';
import { setTimeout } from 'node:timers/promises';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import nacl from 'tweetnacl';
import { intentHash } from '../../domain/canonical';
import { toBase58 } from '../../domain/encoding';
import { nacl25519Signer, signSubmitSync, type SubmitRequest } from '@intent-service/client';
import { buildSigningMessage } from '../../domain/signing-message';
import { executionWorkflowId, submitSignatureUpdate, type SubmitSignatureArgs } from '../../contracts/temporal';
import type { JsonClient } from '../http';
import { closedLoop, merge, type LoadResult } from '../load';
import { cpuMs } from '../proc';
import type { FloorWork } from '../floor/workflows';
import type { BenchStack } from '../stack';
import { round } from '../stats';
import { openDatabase } from '../../db/database';
import { ExecutionStore } from '../../db/execution-store';

// Case 1: valid submits to executions that already have their deposit (OPERATION_PENDING ->
// SIGNING), through the API, against the same Update sent straight to Temporal by
// @temporalio/client. Bodies are signed before the clock starts, so neither side pays for
// tweetnacl; the direct side also gets its Update arguments ready-made.

// The setup is not measured; at a higher concurrency the dev server's SQLite queue makes single
// calls overrun the API's 10 s Temporal deadline on this machine.
const SETUP_CONCURRENCY = 10;
/** The same bound the API puts on each Temporal call (execution-service TEMPORAL_CALL_MS). */
const CALL_DEADLINE_MS = 10_000;
/** A pause between the setup and the measured runs (see runSubmitCase). */
const SETTLE_MS = 5_000;
/** The longest the worker's read-model catch-up may take to write the records of a direct run (a pass every 5 s). */
const CATCH_UP_MS = 60_000;
const WALLETS = 8;
const DOMAIN = 'localhost';

interface Prepared {
  wallet: string;
  executionId: string;
  body: SubmitRequest;
  direct: SubmitSignatureArgs;
}

export interface SubmitRuns {
  api: LoadResult;
  direct: LoadResult;
  /** The same Update to a workflow that only answers it (bench/floor emptySubmitWorkflow). */
  floor: LoadResult;
  /**
   * The same floor doing, besides its answer, what an execution's status change makes the server
   * do: upsert the ExecutionState search attribute; and that plus one activity.
   */
  floorParts: { searchAttribute: LoadResult; activity: LoadResult; close: LoadResult };
  /** One execution submitted through the API, for its history's cost. */
  sampleWorkflowId: string;
  /** Wall time of the unmeasured prepare + deposit + signing. */
  setupMs: number;
  /** CPU time the API process used per submit, over its runs (nothing else reaches it meanwhile). */
  apiCpuMsPerRequest: number;
  /** CPU time per Update of the server, of the worker that ran the side's workflows and of the API, over its runs. */
  cpu: Record<CpuSide, UpdateCpu>;
}

/** The sides whose CPU per Update is counted: the execution (directly, through the API) and the floors that bracket it. */
export type CpuSide = 'api' | 'direct' | 'floorSearchAttribute' | 'floorClose';

/**
 * CPU milliseconds per Update, by process, over a side's runs: the Temporal server (on the dev
 * server its SQLite too), the worker that ran the workflows (the service's worker(s), or the floor
 * worker) and the API (through the API only). The server finishes some of a run's work after its
 * last answer (its visibility writes), which then counts in the next run's: a run's figure is its
 * share within about a millisecond, not to the microsecond.
 */
export interface UpdateCpu {
  serverMs: number;
  workerMs: number;
  apiMs: number;
}

/** Adds up, per side, the CPU time of the server, the side's worker(s) and the API over each measured run. */
class CpuMeter {
  private readonly spent = new Map<CpuSide, { updates: number; server: number; worker: number; api: number }>();
  constructor(private readonly stack: BenchStack) {}

  async run(name: CpuSide, workers: readonly number[], measured: () => Promise<LoadResult>): Promise<LoadResult> {
    const { serverPid, api } = this.stack;
    const sum = (pids: readonly number[]) => pids.reduce((total, pid) => total + cpuMs(pid), 0);
    const before = { server: serverPid ? cpuMs(serverPid) : 0, worker: sum(workers), api: cpuMs(api.pid) };
    const result = await measured();
    const side = this.spent.get(name) ?? { updates: 0, server: 0, worker: 0, api: 0 };
    side.updates += result.latenciesMs.length;
    side.server += (serverPid ? cpuMs(serverPid) : 0) - before.server;
    side.worker += sum(workers) - before.worker;
    side.api += cpuMs(api.pid) - before.api;
    this.spent.set(name, side);
    return result;
  }

  perUpdate(name: CpuSide): UpdateCpu {
    const side = this.spent.get(name) ?? { updates: 0, server: 0, worker: 0, api: 0 };
    const per = (ms: number) => round(ms / Math.max(1, side.updates), 2);
    return { serverMs: per(side.server), workerMs: per(side.worker), apiMs: per(side.api) };
  }
}

/**
 * A setup call, tried up to 3 times on a 5xx or a broken connection. `alsoOk` are answers that
 * count as success on a retry (a prepare whose first try timed out but started the workflow: 409).
 */
async function setupCall(call: () => Promise<{ status: number; body: any }>, what: string, alsoOk: number[] = []): Promise<void> {
  let last = '';
  for (let attempt = 1; attempt <= 3; attempt++) {
    try {
      const answer = await call();
      if (answer.status >= 200 && answer.status <= 299) return;
      if (attempt > 1 && alsoOk.includes(answer.status)) return;
      last = `HTTP ${answer.status} ${JSON.stringify(answer.body)}`;
      if (answer.status < 500) break;
    } catch (err) {
      last = (err as Error).message;
    }
  }
  throw new Error(`${what}: ${last}`);
}

/** Prepares and deposits `count` executions through the API, then signs a submit body for each. */
async function prepareExecutions(stack: BenchStack, http: JsonClient, count: number): Promise<Prepared[]> {
  const auth = { authorization: `Bearer ${stack.token}` };
  const wallets = Array.from({ length: WALLETS }, () => nacl.sign.keyPair());
  const run = randomUUID().slice(0, 8);
  const made: Array<{ pair: nacl.SignKeyPair; wallet: string; executionId: string; intent: object }> = [];
  const setup = await closedLoop(count, SETUP_CONCURRENCY, async (i) => {
    const pair = wallets[i % WALLETS];
    const wallet = toBase58(pair.publicKey);
    const executionId = `bench-${run}-${i}`;
    const intent = {
      action: 'swap',
      from: { chain: 'solana', token: 'USDC', amount: '125.50' },
      to: { chain: 'base', token: 'ETH' },
      nonce: executionId,
    };
    await setupCall(() => http.post(`${stack.apiUrl}/api/v1/executions/${wallet}`, { executionId, intent }, auth), 'prepare', [409]);
    // Deposits are idempotent per txHash, so a retry is safe.
    await setupCall(
      () =>
        http.post(
          `${stack.apiUrl}/api/v1/executions/${wallet}/${executionId}/deposit`,
          { txHash: `0x${i.toString(16)}${run}`, chain: 'solana' },
          auth,
        ),
      'deposit',
    );
    made.push({ pair, wallet, executionId, intent });
  });
  // A few setup failures on an overloaded machine cost a few samples, not the run.
  if (setup.errors > count / 10) throw new Error(`submit setup: ${setup.errors} of ${count} failed, first: ${setup.firstError}`);
  if (setup.errors > 0)
    process.stderr.write(
      `[bench] submit setup: ${setup.errors} of ${count} executions failed (${setup.firstError}); measuring without them\n`,
    );
  const timestamp = Math.floor(Date.now() / 1000);
  return made.map(({ pair, wallet, executionId, intent }) => {
    const body = signSubmitSync(nacl25519Signer(pair.secretKey), { wallet, executionId, intent, domain: DOMAIN, timestamp });
    const signingMessage = buildSigningMessage({ domain: DOMAIN, executionId, address: wallet, intentHash: intentHash(intent), timestamp });
    const direct: SubmitSignatureArgs = {
      payload: { signature: body.signature, publicKey: body.publicKey, connectEnvelope: { ...body.connectEnvelope }, submittedAt: '' },
      signingMessage,
    };
    return { wallet, executionId, body, direct };
  });
}

/**
 * Waits until the read model shows every execution of a direct run signed (but as many as failed). Nobody wrote those
 * records (the API writes the ones it answers): the worker's catch-up fetches each run's result a
 * pass or two later, and that work belongs to the direct side, not to the next run's window.
 */
async function readModelCaughtUp(store: ExecutionStore, items: Prepared[], failed: number): Promise<void> {
  const ids = items.map((p) => executionWorkflowId(p.wallet, p.executionId));
  const deadline = Date.now() + CATCH_UP_MS;
  for (;;) {
    const records = await store.getMany(ids);
    const behind = ids.filter((id) => records.get(id)?.status !== 'SIGNING');
    // A submit that failed left its execution unsigned.
    if (behind.length <= failed) return;
    if (Date.now() > deadline)
      throw new Error(
        `direct submits: the read model still shows ${behind.length} of ${ids.length} unsigned after ${CATCH_UP_MS} ms (first ${behind[0]})`,
      );
    await setTimeout(250);
  }
}

function viaApi(stack: BenchStack, http: JsonClient, items: Prepared[]) {
  return async (i: number) => {
    const { wallet, body } = items[i];
    const answer = await http.post(`${stack.apiUrl}/api/v1/executions/${wallet}/submit`, body);
    if (answer.status !== 200 || answer.body?.result?.status !== 'SIGNING')
      throw new Error(`submit: HTTP ${answer.status} ${JSON.stringify(answer.body)}`);
  };
}

function viaClient(client: Client, items: Prepared[]) {
  return async (i: number) => {
    const { wallet, executionId, direct } = items[i];
    const args = { ...direct, payload: { ...direct.payload, submittedAt: new Date().toISOString() } };
    const handle = client.workflow.getHandle(executionWorkflowId(wallet, executionId));
    const result = await client.withDeadline(Date.now() + CALL_DEADLINE_MS, () =>
      handle.executeUpdate(submitSignatureUpdate, { args: [args] }),
    );
    if (result.status !== 'SIGNING') throw new Error(`direct submit: status ${result.status}`);
  };
}

/** Starts `count` floor workflows doing `work` (not measured) and returns their ids. */
async function startFloorWorkflows(stack: BenchStack, client: Client, count: number, work: FloorWork): Promise<string[]> {
  const run = randomUUID().slice(0, 8);
  const ids = Array.from({ length: count }, (_, i) => `floor-submit-${work}-${run}-${i}`);
  const started = await closedLoop(count, SETUP_CONCURRENCY, async (i) => {
    await client.workflow.start('emptySubmitWorkflow', { taskQueue: stack.floorTaskQueue, workflowId: ids[i], args: [work] });
  });
  if (started.errors > 0) throw new Error(`floor setup: ${started.errors} of ${count} failed, first: ${started.firstError}`);
  return ids;
}

function viaFloor(client: Client, ids: string[], args: SubmitSignatureArgs[]) {
  return async (i: number) => {
    const handle = client.workflow.getHandle(ids[i]);
    const result = await client.withDeadline(Date.now() + CALL_DEADLINE_MS, () =>
      handle.executeUpdate(submitSignatureUpdate, {
        args: [{ ...args[i], payload: { ...args[i].payload, submittedAt: new Date().toISOString() } }],
      }),
    );
    if (result.status !== 'SIGNING') throw new Error(`floor submit: status ${result.status}`);
  };
}

/** The floor's kinds, in the order they are measured (and back). */
const FLOOR_KINDS: readonly FloorWork[] = ['none', 'search-attribute', 'search-attribute+activity', 'search-attribute+close'];

/**
 * `count` submits through the API, `count` through the client and `count` to each kind of floor,
 * at `concurrency`, in the order API, direct, floors, floors reversed, direct, API (two halves
 * each), so that a drift in machine load hits every side alike.
 */
export async function runSubmitCase(
  stack: BenchStack,
  http: JsonClient,
  client: Client,
  concurrency: number,
  count: number,
): Promise<SubmitRuns> {
  const setupStart = performance.now();
  // The floors' workflows first, so that every side's workflows are as old when measured.
  const floorIds = new Map<FloorWork, string[]>();
  for (const work of FLOOR_KINDS) floorIds.set(work, await startFloorWorkflows(stack, client, count, work));
  const prepared = await prepareExecutions(stack, http, 2 * count);
  // The server records the setup's starts in visibility and its other queues for a few seconds
  // after they were acknowledged; measured then, updates queue behind those writes for a second
  // or more (floor p99 over 1 s right after its starts, none 10 s later).
  await setTimeout(SETTLE_MS);
  const setupMs = performance.now() - setupStart;
  // Executions go to the two sides alternately, so that both get the same mix of older and newer
  // ones (an execution the worker evicted from its cache replays its history on the next task).
  const api = prepared.filter((_, i) => i % 2 === 0);
  const direct = prepared.filter((_, i) => i % 2 === 1).slice(0, api.length);
  const half = Math.floor(direct.length / 2);
  const [a1, a2, d1, d2] = [api.slice(0, half), api.slice(half, direct.length), direct.slice(0, half), direct.slice(half)];
  // Signing blocked this process for a while: sockets the API closed meanwhile (keep-alive
  // timeout) would look free to the agent and fail on reuse, so start the API runs on fresh ones.
  http.dropIdle();
  const apiRuns: LoadResult[] = [];
  const directRuns: LoadResult[] = [];
  const meter = new CpuMeter(stack);
  const serviceWorkers = stack.workers.map((w) => w.pid);
  const apiRun = async (items: Prepared[]) =>
    apiRuns.push(await meter.run('api', serviceWorkers, () => closedLoop(items.length, concurrency, viaApi(stack, http, items))));
  const readModel = await openDatabase(stack.readModel);
  const store = new ExecutionStore(readModel);
  const directRun = async (items: Prepared[]) => {
    const run = await meter.run('direct', serviceWorkers, () => closedLoop(items.length, concurrency, viaClient(client, items)));
    directRuns.push(run);
    await readModelCaughtUp(store, items, run.errors);
  };
  // As many Updates to each floor as direct ones, with the direct side's arguments.
  const floorArgs = direct.map((d) => d.direct);
  const floorRuns = new Map<FloorWork, LoadResult[]>(FLOOR_KINDS.map((work) => [work, []]));
  const metered: Partial<Record<FloorWork, CpuSide>> = {
    'search-attribute': 'floorSearchAttribute',
    'search-attribute+close': 'floorClose',
  };
  const floorRun = async (work: FloorWork, from: number, to: number) => {
    const ids = (floorIds.get(work) ?? []).slice(from, to);
    const measured = () => closedLoop(ids.length, concurrency, viaFloor(client, ids, floorArgs.slice(from, to)));
    const name = metered[work];
    floorRuns.get(work)?.push(await (name ? meter.run(name, [stack.floorWorker.pid], measured) : measured()));
  };
  await apiRun(a1);
  await directRun(d1);
  for (const work of FLOOR_KINDS) await floorRun(work, 0, half);
  for (const work of [...FLOOR_KINDS].reverse()) await floorRun(work, half, direct.length);
  await directRun(d2);
  http.dropIdle();
  await apiRun(a2);
  await readModel.close();
  const allFloorIds = [...floorIds.values()].flat();
  await closedLoop(allFloorIds.length, SETUP_CONCURRENCY, async (i) => {
    // The floors that close in their Update's task are gone already.
    await client.workflow
      .getHandle(allFloorIds[i])
      .terminate('bench done')
      .catch((err: unknown) => {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
      });
  });
  const floorOf = (work: FloorWork) => merge(floorRuns.get(work) ?? []);
  return {
    api: merge(apiRuns),
    direct: merge(directRuns),
    floor: floorOf('none'),
    floorParts: {
      searchAttribute: floorOf('search-attribute'),
      activity: floorOf('search-attribute+activity'),
      close: floorOf('search-attribute+close'),
    },
    sampleWorkflowId: executionWorkflowId(api[0].wallet, api[0].executionId),
    setupMs,
    apiCpuMsPerRequest: meter.perUpdate('api').apiMs,
    cpu: {
      api: meter.perUpdate('api'),
      direct: meter.perUpdate('direct'),
      floorSearchAttribute: meter.perUpdate('floorSearchAttribute'),
      floorClose: meter.perUpdate('floorClose'),
    },
  };
}
