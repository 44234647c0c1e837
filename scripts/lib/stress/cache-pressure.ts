import { randomBytes, randomUUID } from 'node:crypto';
import { depositCompletedSignal, EXECUTION_WORKFLOW_TYPE, executionWorkflowId } from '../../../contracts/temporal';
import { newWallet, sampleIntent, signedBody, type TestWallet } from '../wallets';
import { freePort } from '../../../config/free-port';
import type { ChildService } from '../child-service';
import { ProcessStack } from '../stack/process-stack';
import { errorTypes, figures, jsonLines, retry503, runLoad, runOpenLoop, type LoadRequest, type LoadResult } from './load-client';
import { watchWorker, type WorkerFigures } from './worker-watch';
import { taskTroubles, wedgedWorkflows, type TaskTroubles } from './workflow-health';

export interface CachePressureOptions {
  /** Open executions: several times `cache`, so that the worker's sticky cache stays full. */
  executions: number;
  /** WORKER_CACHED_WORKFLOWS. */
  cache: number;
  /** EXECUTION_LINGER_S: how long an execution stays open after SIGNING or EXPIRED. */
  lingerSeconds: number;
  /** How long the open-loop load lasts. */
  seconds: number;
  /** The open loop's rate, as a multiple of the closed loop's (the saturating rate). Default 2. */
  rateFactor?: number;
  /** Share of the executions prepared with a ttlSeconds that ends during the load. Default 0.2. */
  expiringShare?: number;
  /** Signals sent straight to Temporal, as a share of the HTTP rate. Default 0.2. */
  signalShare?: number;
  /**
   * Share of the executions that get a deposit but never a submit, so they stay open (OPERATION_PENDING)
   * through the load, as executions waiting for their signature do in production: with executions
   * that close at their final status, they are what keeps the cache full. Default 0.5.
   */
  pendingShare?: number;
  /**
   * CAPACITY_OPEN_RUNS: the open runs the API admits (docs/decisions/0082), below `cache` to protect
   * the worker; undefined: no bound, the worker holds every open execution (the control run).
   */
  capacity?: number;
  /**
   * WORKER_OPEN_RUNS of every worker: each takes no new run past it, and the API admits what the
   * live workers announce (docs/decisions/0107; CAPACITY_OPEN_RUNS unset). Undefined: no bound.
   */
  workerOpenRuns?: number;
  /** Worker processes (default 1), each with a cache of `cache`. */
  workers?: number;
  /** SIGKILL the last worker halfway through the load (with `workers` > 1): its runs must finish on the others. */
  killWorker?: boolean;
  /** Share of the open loop's requests that prepare a new execution, so the service stays at its capacity. Default 0. */
  prepareShare?: number;
  /** Requests of the closed loop that measures the saturating rate (50 clients). Default: 300, or `executions` if more. */
  calibrationRequests?: number;
  /** Progress lines. */
  log?: (line: string) => void;
  /** Makes the stack from its options (default: a ProcessStack; the tests bring their own kind). */
  makeStack?: (options: { env: Record<string, string> }) => ProcessStack;
}

export interface CachePressureReport {
  executions: number;
  /** Executions that got no submit, so stayed open through the load. */
  pending: number;
  cache: number;
  lingerSeconds: number;
  /** CAPACITY_OPEN_RUNS, or undefined for none. */
  capacity?: number;
  /** Each worker's WORKER_OPEN_RUNS, when the workers bound themselves. */
  workerOpenRuns?: number;
  /** Worker processes, and whether the last was SIGKILLed halfway through the load. */
  workers: number;
  killedWorker: boolean;
  /** The most open executions the workers held at once (their caches' sizes summed at one sample), and the most running on the server at one sample. */
  openRunsPeak: { held: number; running: number };
  /** Prepares answered 503 CAPACITY_FULL: before the load (of the `executions` meant) and during it. */
  refused: { setup: number; load: number };
  /** Prepares admitted during the load. */
  admittedDuringLoad: number;
  /** Closed loop, 50 clients: the rate this machine saturates at, req/s. */
  ceiling: number;
  /** The open loop's rate, req/s. */
  rate: number;
  /** From the first open-loop send to the last answer, s. */
  seconds: number;
  requests: number;
  signals: { sent: number; failed: number };
  /** Expiring executions found EXPIRED at the end: their expiry timer fired during the load. */
  expired: number;
  /** Pending workflow task at attempt ≥ 3 right after the load, and again after the settle. */
  wedgedAtLoadEnd: string[];
  wedged: string[];
  /** Executions with an acknowledged action (a 200 deposit or submit, an accepted signal) not in their record 60 s later. */
  invisible: string[];
  /** Distinct executions wedged or with an invisible action. */
  stranded: number;
  tasks: TaskTroubles;
  /** The workers' figures summed (core lines, counters, recreations); cache peak and RSS the largest of one worker. */
  worker: WorkerFigures;
  /** Each worker's own sticky cache peak, in start order. */
  cachePeaks: number[];
  /** One line per request kind (count, statuses, latencies). */
  figures: string[];
  /** The API's error log lines (its 500s), by route and error type, with the first message. */
  apiErrors: ReturnType<typeof errorTypes>;
}

interface Execution {
  wallet: TestWallet;
  executionId: string;
  workflowId: string;
  intent: unknown;
  txHash: string;
  body: ReturnType<typeof signedBody>;
  ttlSeconds: number;
}

type Req = LoadRequest & { execution: Execution };

const CLIENTS = 50;
const VISIBLE_WITHIN_MS = 60_000;

/**
 * Creates the condition under which a worker's sticky cache is full: `executions` open workflows
 * against a cache of `cache`, then Updates (deposit, submit), queries (GET) and signals
 * (depositCompleted, as a chain watcher sends it) at `rateFactor` times the saturating rate, while
 * expiry timers fire, so that tasks wait for a cache slot and Update tasks time out. Reports what
 * stranded, the workflow tasks that timed out or failed, and the worker's cache and memory.
 */
export async function runCachePressure(options: CachePressureOptions): Promise<CachePressureReport> {
  const {
    executions: total,
    cache,
    lingerSeconds,
    seconds,
    rateFactor = 2,
    expiringShare = 0.2,
    signalShare = 0.2,
    pendingShare = 0.5,
    capacity,
    workerOpenRuns,
    workers = 1,
    killWorker = false,
    prepareShare = 0,
    calibrationRequests = Math.max(300, total),
  } = options;
  const log = options.log ?? (() => undefined);
  const metricsPort = await freePort();
  const makeStack = options.makeStack ?? ((stackOptions) => new ProcessStack(stackOptions));
  const stack = await makeStack({
    env: {
      EXECUTION_LINGER_S: String(lingerSeconds),
      WORKER_CACHED_WORKFLOWS: String(cache),
      WORKER_METRICS_PORT: String(metricsPort),
      // The core's lines about buffered tasks are warnings and errors.
      SDK_LOG_LEVEL: 'WARN',
      // Submit bodies are signed once, before a load that may last longer than the default 300 s.
      ENVELOPE_MAX_AGE_S: '86400',
      ...(capacity === undefined ? {} : { CAPACITY_OPEN_RUNS: String(capacity) }),
      // The workers bound themselves and announce it; the API admits their sum less the largest.
      ...(workerOpenRuns === undefined ? {} : { WORKER_OPEN_RUNS: String(workerOpenRuns), CAPACITY_OPEN_RUNS: '' }),
    },
  }).start();
  try {
    const watches = [watchWorker(stack.worker!, `http://127.0.0.1:${metricsPort}/metrics`)];
    const extraWorkers: ChildService[] = [];
    for (let i = 1; i < workers; i++) {
      const port = await freePort();
      const worker = await stack.startExtraWorker({ WORKER_METRICS_PORT: String(port) });
      extraWorkers.push(worker);
      watches.push(watchWorker(worker, `http://127.0.0.1:${port}/metrics`));
    }
    const openRuns = sampleOpenRuns(stack, watches);
    const apiLog = jsonLines(stack.api!.child.stdout!);
    const auth = { authorization: `Bearer ${stack.token}` };
    const random = seeded(total * 7919 + cache);
    const expiringCount = Math.round(total * expiringShare);
    const prepareOf = (e: Execution): Req => ({
      kind: 'prepare',
      method: 'POST',
      path: `/api/v1/executions/${e.wallet.id}`,
      headers: auth,
      body: { executionId: e.executionId, intent: e.intent, ttlSeconds: e.ttlSeconds },
      execution: e,
    });
    const refused = { setup: 0, load: 0 };
    const isRefused = (r: LoadResult) => r.status === 503 && r.body?.code === 'CAPACITY_FULL';
    /** Prepares `list` and reads each admitted one; answers the admitted ones (all of them without a capacity). */
    const prepareAll = async (list: Execution[]): Promise<Execution[]> => {
      const done = await runLoad(stack.apiUrl, list.map(prepareOf), CLIENTS);
      await retry503(stack.apiUrl, done.results);
      refused.setup += done.results.filter(isRefused).length;
      const failed = done.results.filter((r) => ![200, 201, 409].includes(r.status) && !isRefused(r));
      if (failed.length > 0)
        throw new Error(`${failed.length} prepares failed, first: ${failed[0].status} ${JSON.stringify(failed[0].body)}`);
      const admitted = done.results.filter((r) => !isRefused(r)).map((r) => r.request.execution);
      // A GET waits for each workflow's first task: the cache is full once they have all run.
      const reads = await runLoad(stack.apiUrl, admitted.map(getOf), CLIENTS);
      await retry503(stack.apiUrl, reads.results);
      return admitted;
    };
    const meant = makeExecutions(total - expiringCount, () => Math.max(3600, 4 * seconds));
    log(
      `preparing ${meant.length} executions (${workers} workers, cache ${cache}, ${workerOpenRuns !== undefined ? `${workerOpenRuns} open runs per worker` : `capacity ${capacity ?? 'none'}`})`,
    );
    const steady = await prepareAll(meant);
    const pending = new Set(steady.slice(0, Math.round(steady.length * pendingShare)));

    const mix = (list: Execution[], n: number, prepares = 0): Req[] =>
      Array.from({ length: n }, () => {
        if (random() < prepares) return prepareOf(makeExecutions(1, () => Math.max(3600, 4 * seconds))[0]);
        const e = list[Math.floor(random() * list.length)];
        const r = random();
        const deposit: Req = {
          kind: 'deposit',
          method: 'POST',
          path: `${recordPath(e)}/deposit`,
          headers: auth,
          body: { txHash: e.txHash },
          execution: e,
        };
        // An expiring execution gets no deposit, so that its timer finds it PREPARED.
        if (r < 0.3 && e.ttlSeconds < seconds) return getOf(e);
        if (r < 0.3) return deposit;
        // One that waits for its signature gets its deposit again (an Update its validator answers) instead.
        if (r < 0.65 && pending.has(e)) return deposit;
        if (r < 0.65)
          return { kind: 'submit', method: 'POST', path: `/api/v1/executions/${e.wallet.id}/submit`, body: e.body, execution: e };
        return getOf(e);
      });

    const calibration = await runLoad(stack.apiUrl, mix(steady, calibrationRequests), CLIENTS);
    await retry503(stack.apiUrl, calibration.results);
    const ceiling = calibration.results.length / calibration.seconds;
    const rate = rateFactor * ceiling;
    log(`closed loop (${CLIENTS} clients): ${ceiling.toFixed(1)} req/s; open loop at ${rate.toFixed(1)} req/s for ${seconds} s`);

    // Prepared last, so that their expiry falls inside the load whatever the setup took.
    const expiring = await prepareAll(makeExecutions(expiringCount, () => Math.max(5, Math.round(seconds * (0.2 + 0.6 * random())))));
    const all = [...steady, ...expiring];

    const signals = { sent: 0, failed: 0 };
    const signalled = new Set<Execution>();
    const signalling = openLoopSignals(steady, rate * signalShare, seconds, random, async (e) => {
      try {
        await stack.client.workflow.getHandle(e.workflowId).signal(depositCompletedSignal, { txHash: e.txHash });
        signals.sent++;
        signalled.add(e);
      } catch {
        signals.failed++;
      }
    });
    const killing =
      killWorker && extraWorkers.length > 0
        ? new Promise<void>((resolve) => setTimeout(resolve, (seconds * 1000) / 2)).then(async () => {
            log(`SIGKILL worker ${workers} (pid ${extraWorkers.at(-1)!.child.pid}) halfway through the load`);
            await ProcessStack.kill(extraWorkers.at(-1));
          })
        : Promise.resolve();
    const load = await runOpenLoop(stack.apiUrl, mix(all, Math.round(rate * seconds), prepareShare), rate, 10, 60_000);
    await killing;
    refused.load = load.results.filter(isRefused).length;
    const admittedDuringLoad = load.results.filter((r) => r.request.kind === 'prepare' && r.status === 201).length;
    await signalling;
    const results = [...calibration.results, ...load.results];
    log(`load done: ${load.results.length} requests in ${load.seconds.toFixed(1)} s, ${signals.sent} signals`);

    const ids = [
      ...all,
      ...load.results.filter((r) => r.request.kind === 'prepare' && r.status === 201).map((r) => r.request.execution),
    ].map((e) => e.workflowId);
    const wedgedAtLoadEnd = await wedgedWorkflows(stack.client, ids);
    const { invisible, records } = await awaitVisible(stack.apiUrl, acknowledged(results, signalled));
    const wedged = await wedgedWorkflows(stack.client, ids);
    const tasks = await taskTroubles(stack.client, ids);
    const perWorker = await Promise.all(watches.map((w) => w.stop()));
    const openRunsPeak = await openRuns.stop();
    const expired = expiring.filter((e) => records.get(e)?.status === 'EXPIRED').length;
    const strandedIds = new Set([...wedged.map((w) => w.split(' ')[0]), ...invisible.map((i) => i.split(' ')[0])]);
    return {
      executions: all.length,
      pending: pending.size,
      cache,
      lingerSeconds,
      ...(capacity === undefined ? {} : { capacity }),
      ...(workerOpenRuns === undefined ? {} : { workerOpenRuns }),
      workers,
      killedWorker: killWorker && extraWorkers.length > 0,
      openRunsPeak,
      refused,
      admittedDuringLoad,
      ceiling,
      rate,
      seconds: load.seconds,
      requests: load.results.length,
      signals,
      expired,
      wedgedAtLoadEnd,
      wedged,
      invisible,
      stranded: strandedIds.size,
      tasks,
      worker: summed(perWorker),
      cachePeaks: perWorker.map((w) => w.cachePeak),
      figures: figures(results),
      apiErrors: errorTypes(apiLog),
    };
  } finally {
    await stack.stop();
  }
}

/**
 * Samples every 2 s, until stopped: the open executions the workers hold (their sticky caches'
 * sizes, as their watches last scraped them, summed) and those running on the server (visibility).
 */
function sampleOpenRuns(
  stack: ProcessStack,
  watches: ReadonlyArray<{ cacheSize(): number }>,
): { stop(): Promise<{ held: number; running: number }> } {
  const peak = { held: 0, running: 0 };
  const query = `TaskQueue = '${stack.taskQueue}' AND ExecutionStatus = 'Running' AND WorkflowType = '${EXECUTION_WORKFLOW_TYPE}'`;
  const sample = async () => {
    peak.held = Math.max(
      peak.held,
      watches.reduce((n, w) => n + w.cacheSize(), 0),
    );
    const running = await stack.client.workflow.count(query).catch(() => undefined);
    if (running) peak.running = Math.max(peak.running, running.count);
  };
  const timer = setInterval(() => void sample(), 2000);
  return {
    async stop() {
      clearInterval(timer);
      await sample();
      return peak;
    },
  };
}

/** Several workers' figures as one: counts summed, the cache peak and RSS of the largest one. */
function summed(all: WorkerFigures[]): WorkerFigures {
  const add = (a: Record<string, number>, b: Record<string, number>) => {
    const out = { ...a };
    for (const [k, v] of Object.entries(b)) out[k] = (out[k] ?? 0) + v;
    return out;
  };
  return all.reduce((a, b) => ({
    coreLines: add(a.coreLines, b.coreLines) as WorkerFigures['coreLines'],
    firstCoreLine: a.firstCoreLine ?? b.firstCoreLine,
    cachePeak: Math.max(a.cachePeak, b.cachePeak),
    cacheCounters: add(a.cacheCounters, b.cacheCounters),
    peakRssMb: Math.max(a.peakRssMb, Number.isNaN(b.peakRssMb) ? 0 : b.peakRssMb),
    recreated: a.recreated + b.recreated,
  }));
}

const recordPath = (e: Execution) => `/api/v1/executions/${e.wallet.id}/${e.executionId}`;
const getOf = (e: Execution): Req => ({ kind: 'get', method: 'GET', path: recordPath(e), execution: e });

function makeExecutions(n: number, ttlSeconds: () => number): Execution[] {
  return Array.from({ length: n }, (_, i) => {
    const wallet = newWallet();
    const executionId = `stress-${i}-${randomUUID()}`;
    const intent = sampleIntent();
    return {
      wallet,
      executionId,
      workflowId: executionWorkflowId(wallet.id, executionId),
      intent,
      txHash: `0x${randomBytes(16).toString('hex')}`,
      body: signedBody(wallet, executionId, intent),
      ttlSeconds: ttlSeconds(),
    };
  });
}

/** What each execution must show: its txHash when a deposit was answered 200 or signalled, its signature when a submit was. */
function acknowledged(results: LoadResult<Req>[], signalled: Set<Execution>): Map<Execution, { deposit: boolean; submit: boolean }> {
  const out = new Map<Execution, { deposit: boolean; submit: boolean }>();
  const of = (e: Execution) => out.get(e) ?? out.set(e, { deposit: false, submit: false }).get(e)!;
  for (const e of signalled) of(e).deposit = true;
  for (const r of results) {
    if (r.status !== 200) continue;
    if (r.request.kind === 'deposit') of(r.request.execution).deposit = true;
    if (r.request.kind === 'submit') of(r.request.execution).submit = true;
  }
  return out;
}

/** Reads every acknowledged execution until its record shows what was acknowledged, for at most 60 s. */
async function awaitVisible(
  apiUrl: string,
  expected: Map<Execution, { deposit: boolean; submit: boolean }>,
): Promise<{ invisible: string[]; records: Map<Execution, any> }> {
  const records = new Map<Execution, any>();
  const answers = new Map<Execution, string>();
  const missing = (e: Execution): string[] => {
    const record = records.get(e);
    const want = expected.get(e)!;
    return [
      ...(want.deposit && record?.deposit?.txHash !== e.txHash ? ['deposit'] : []),
      ...(want.submit && record?.signedPayload?.signature !== e.body.signature ? ['submit'] : []),
    ];
  };
  let pending = [...expected.keys()];
  const started = Date.now();
  for (;;) {
    const reads = await runLoad(apiUrl, pending.map(getOf), 20, 10_000);
    for (const r of reads.results) {
      if (r.status === 200) records.set(r.request.execution, r.body?.result);
      answers.set(
        r.request.execution,
        r.error ?? `${r.status}${r.status === 200 ? ` ${r.body?.result?.status}` : ` ${JSON.stringify(r.body).slice(0, 120)}`}`,
      );
    }
    pending = pending.filter((e) => missing(e).length > 0);
    if (pending.length === 0 || Date.now() - started > VISIBLE_WITHIN_MS) break;
    await new Promise((r) => setTimeout(r, 2000));
  }
  return {
    invisible: pending.map((e) => `${e.workflowId} (${missing(e).join(', ')} not in the record; last read: ${answers.get(e)})`),
    records,
  };
}

/** Sends `send(execution)` at `perSecond` for `seconds`, to executions picked at random, without waiting between them. */
async function openLoopSignals(
  list: Execution[],
  perSecond: number,
  seconds: number,
  random: () => number,
  send: (e: Execution) => Promise<void>,
): Promise<void> {
  const count = Math.round(perSecond * seconds);
  const started = Date.now();
  const sending: Promise<void>[] = [];
  for (let i = 0; i < count; i++) {
    await new Promise((r) => setTimeout(r, Math.max(0, started + (i * 1000) / perSecond - Date.now())));
    sending.push(send(list[Math.floor(random() * list.length)]));
  }
  await Promise.all(sending);
}

/** A xorshift generator, so that a run's request order can be replayed from its sizes. */
function seeded(seed: number): () => number {
  let state = seed >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 2 ** 32;
  };
}
