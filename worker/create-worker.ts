import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '../activities';
import { loadNodeTransport } from '../activities/node-transport';
import type { WorkerConfig } from '../config/config';
import { openDatabase, type Database } from '../db/database';
import { ExecutionStore } from '../db/execution-store';
import { DepositAddressStore } from '../db/deposit-addresses';
import { WatcherProgressStore } from '../db/watcher-progress';
import { RefundLedger } from '../db/refund-ledger';
import type { ChainEvent } from '../activities/chain';
import { confirmationsOf, ensureChainWatcher } from './chain-watcher-start';
import { ensureRefundAnnouncer, ensureRefundSweep } from './refund-schedules';
import { ensureWhitelistRepair } from './repair-schedule';
import { RefundPayments } from '../db/refund-payments';
import { LocalSigner, type Signer } from '../lib/signer';
import { RemoteSigner } from '../lib/remote-signer';
import { chainClient } from '../lib/chain-client';
import { dustJudge } from '../lib/refund-dust';
import { marketFees } from '../activities/signed-transactions';
import { amountFor, DEFAULT_REFUND_LIMITS, DEFAULT_REFUND_MINIMUMS } from '../config/refund-limits';
import { GasAccountLedger } from '../db/gas-account';
import { checkDepositKeys } from './deposit-keys-check';
import type { RefundEvent } from '../activities/refunds';
import { TokenStore } from '../tokens/token-store';
import { temporalConnectionOptions } from '../config/temporal-connection';
import { buildIdOf, makeCurrent, type DeploymentVersion } from './deployment-version';
import { refundsTaskQueue, serviceTaskQueues, webhooksTaskQueue } from '../contracts/temporal';
import { runCatchUp } from './read-model-catch-up';
import { bundleInChild, SHARED_WORKFLOW_MODULES } from './workflow-bundle';
import type { Tracing } from '../lib/tracing';
import { activityInterceptors, WORKFLOW_INTERCEPTOR_MODULES, workflowSinks } from './tracing';
import { redactor } from '../lib/redact';
import { secretsOf } from '../config/secrets';
import { ExecutionSlots } from './execution-slots';
import { announceCapacity, workerCapacityId } from './capacity-announcer';
import { WorkerCapacityStore } from '../db/worker-capacity';
import { createLogger } from '../config/logger';
import type { Logger } from 'pino';

export interface RunningWorker {
  /** The executions worker's slots (runs cached, slots held), when it bounds its open runs. */
  slots?: ExecutionSlots;
  /** The worker of the service's task queue: executions, batches, the chain watcher, and whatever an older build started there. */
  worker: Worker;
  /** The worker of the refunds task queue (refundsTaskQueue): the sweep and the refund workflows it bounds (decision 0089). */
  refunds: Worker;
  /** The worker of the webhooks task queue (webhooksTaskQueue): every webhook delivery and the ledger's announcer, without a cache (decision 0089). */
  webhooks: Worker;
  /** The read model the projectExecution activity writes to. */
  database: Database;
  connection: NativeConnection;
  /** The worker's Worker Deployment version; undefined for an unversioned worker. */
  version?: DeploymentVersion;
  /**
   * Resolves once the version is its deployment's current one (WORKER_PROMOTE=current), at once
   * when nothing is to be promoted; rejects when the server did not accept it in time.
   */
  promoted: Promise<void>;
  /** Resolves with the chain watcher's workflow id once it runs (undefined without CHAIN_RPC_URL or after a shutdown first). */
  chainWatcher: Promise<string | undefined>;
  /** Resolves with the refund.due sweep's schedule id once it exists (undefined without a webhook endpoint or after a shutdown first). */
  refundAnnouncer: Promise<string | undefined>;
  /** Resolves with the refund payments' schedule id once it exists (undefined without CHAIN_RPC_URL or after a shutdown first). */
  refundSweep: Promise<string | undefined>;
  /** Resolves with the whitelist repair's schedule id once it exists (undefined when WHITELIST_REPAIR_INTERVAL_S is 0 or after a shutdown first). */
  whitelistRepair: Promise<string | undefined>;
  /** Resolves when the three workers have stopped (after shutdown() or a fatal error of one, which stops the others). */
  done: Promise<void>;
  /** Drains the three workers: stops polling, lets running tasks finish, then closes the connection. */
  shutdown(): Promise<void>;
}

/**
 * Worker tuning, measured with `npm run bench` (docs/performance.md).
 * - maxCachedWorkflows (WORKER_CACHED_WORKFLOWS, default 400): the runs this worker keeps in memory.
 *   A task of an uncached run waits for an eviction, the path on which the Temporal core can wedge
 *   a run (0075), so no open run should ever be evicted: the worker takes at most WORKER_OPEN_RUNS
 *   (nine tenths of the cache by default) new runs, holding its polls for new runs while full (its
 *   own runs' tasks go on, worker/execution-slots.ts), and the API admits what the live workers
 *   announce (docs/decisions/0107). `npm run stress -- --protection off` drives the wedge on purpose.
 * - Workflow tasks at once: 40 (the SDK's default), at most the cache.
 */
const WORKFLOW_TASKS_AT_ONCE = 40;
const tuning = (config: WorkerConfig, slots: ExecutionSlots | undefined): Partial<WorkerOptions> => ({
  maxCachedWorkflows: config.workerCachedWorkflows,
  ...(slots
    ? {
        tuner: {
          workflowTaskSlotSupplier: slots,
          // The SDK's defaults, which a tuner must name.
          activityTaskSlotSupplier: { type: 'fixed-size', numSlots: 100 },
          localActivityTaskSlotSupplier: { type: 'fixed-size', numSlots: 100 },
          nexusTaskSlotSupplier: { type: 'fixed-size', numSlots: 100 },
        },
      }
    : {}),
});

/**
 * The executions worker's slots, bounded by WORKER_OPEN_RUNS; none (the SDK's fixed slots) without
 * a cache, without a bound, or when the caller tunes the worker's concurrency itself.
 */
function executionSlotsFor(config: WorkerConfig, overrides: Partial<WorkerOptions>): ExecutionSlots | undefined {
  if (config.workerOpenRuns === 0 || config.workerCachedWorkflows === 0) return undefined;
  if (overrides.tuner !== undefined || overrides.maxConcurrentWorkflowTaskExecutions !== undefined) return undefined;
  if (overrides.maxConcurrentActivityTaskExecutions !== undefined || overrides.maxConcurrentLocalActivityExecutions !== undefined)
    return undefined;
  return new ExecutionSlots({
    concurrent: Math.min(WORKFLOW_TASKS_AT_ONCE, config.workerCachedWorkflows),
    openRuns: config.workerOpenRuns,
  });
}

/**
 * The refunds worker's tuning (docs/decisions/0089): the sweep keeps at most REFUND_OPEN_RUNS
 * refund workflows running, counted from Temporal's visibility before each sweep; the cache holds
 * twice as many and the sweep itself, so that a sweep that read a count a whole sweep old still
 * leaves it room and no open run is evicted for another (the path of decision 0075). Refunds keep
 * a cache, unlike webhooks: a refund's history can reach about 3,000 events before continue-as-new
 * (200 steps of a dozen or more), and replaying that at every task, at the half millisecond an
 * event measured here, would cost over a second each.
 */
const refundsTuning = (config: WorkerConfig): Partial<WorkerOptions> => {
  const cache = 2 * config.refunds.openRuns + 1;
  return { maxCachedWorkflows: cache, maxConcurrentWorkflowTaskExecutions: Math.min(cache, 40) };
};

/**
 * The webhooks worker's tuning (docs/decisions/0089): its runs are as many as receivers leave
 * undelivered (one per execution or ledger change, open up to three days while a receiver is
 * down), and an execution cannot wait for room to hand its webhooks over, so no cache could be
 * sized for them. Without a cache there is no sticky queue, every task carries its run's whole
 * history and no run is evicted to make room: the core's wedge (0075) needs a sticky task of an
 * uncached run. One task at a time, so that no task waits in the worker, where its timeout runs,
 * for the one run the core holds; the others wait on the server. Each task replays its run from
 * the start, which these short histories (a few events per webhook) make cheap.
 */
const WEBHOOKS_TUNING = { maxCachedWorkflows: 0, maxConcurrentWorkflowTaskExecutions: 1 } as const;

/** Builds and starts a worker for the service's workflows and activities. */
export async function startWorker(
  config: WorkerConfig,
  address: string,
  overrides: Partial<WorkerOptions> = {},
  hooks: Pick<ActivityDeps, 'onNodeRequest' | 'onLateNode'> & {
    /** Where the worker's own lines go (the read model or a schedule not reached yet, the catch-up); default: a logger of its own at LOG_LEVEL. */
    logger?: Logger;
    /** Told of the chain activities' rounds, signals and reorgs (the worker's chain metrics). */
    onChainEvent?: (event: ChainEvent) => void;
    /** Told of the refunder's signatures, payments and holds (the worker's refund metrics). */
    onRefundEvent?: (event: RefundEvent) => void;
    /** Told of each read-model catch-up pass that wrote records or failed (the worker's catch-up metrics). */
    onCatchUp?: (outcome: { wrote: number } | { failed: Error }) => void;
    /** The process's tracer provider (lib/tracing.ts); absent: activities make no spans, workflow spans are dropped. */
    tracing?: Tracing;
  } = {},
): Promise<RunningWorker> {
  // Before anything is opened: a worker without the storage nodes' keys cannot do its job.
  const nodeTransport = loadNodeTransport(config);
  const logger = hooks.logger ?? createLogger('worker', config.logLevel, undefined, secretsOf(config));
  const tokens = config.chain?.tokens ?? [];
  const minimum = (chain: string, asset: string) => amountFor(config.refunds.minimums, DEFAULT_REFUND_MINIMUMS, tokens, chain, asset);
  // Rows too small to ever pay back are held as they are written (lib/refund-dust.ts). A viem
  // client sends nothing until its first request: the node is asked for fees only when a row is new.
  const feesClient = config.chain && chainClient(config.chain.rpcUrl);
  const judge = feesClient && dustJudge(minimum, config.refunds.minFeeMultiple, () => marketFees(feesClient));
  // A read model that does not answer only delays its writes (projectExecution retries); the
  // worker starts anyway, since executions and batches do not need it.
  const database = await openDatabase(config.database, (err) =>
    logger.error({ err: err.message }, 'read model unavailable; its writes wait until it is back'),
  );
  const connection = await NativeConnection.connect(temporalConnectionOptions(config, address)).catch(async (err) => {
    await database.close().catch(() => undefined);
    throw err;
  });
  // A caller that brings its own workflow code, or a webpack hook (a function: it cannot cross
  // into the child), gets the SDK's in-process bundling.
  const ownCode =
    overrides.workflowBundle !== undefined ||
    overrides.workflowsPath !== undefined ||
    overrides.bundlerOptions?.webpackConfigHook !== undefined;
  const code = ownCode
    ? undefined
    : await bundleInChild({
        workflowsPath: require.resolve('../workflows'),
        workflowInterceptorModules: overrides.interceptors?.workflowModules ?? [...WORKFLOW_INTERCEPTOR_MODULES],
        payloadConverterPath: overrides.dataConverter?.payloadConverterPath,
        failureConverterPath: overrides.dataConverter?.failureConverterPath,
        ignoreModules: overrides.bundlerOptions?.ignoreModules,
        preloadModules: [...SHARED_WORKFLOW_MODULES],
      }).catch(async (err) => {
        await connection.close().catch(() => undefined);
        await database.close().catch(() => undefined);
        throw err;
      });
  // A worker whose workflow code is known is a version of its deployment, named by that code;
  // every workflow stays on the version that started it (decision 0068).
  const given = overrides.workflowBundle;
  const bundle = code ?? (given && 'code' in given ? given.code : undefined);
  const version =
    config.workerDeployment && bundle !== undefined
      ? { deploymentName: config.workerDeployment.name, buildId: buildIdOf(bundle) }
      : undefined;
  // The deposit seed is read once here: missing, malformed, open to group or others, or not the
  // seed of the read model's addresses, the worker refuses to start naming the file.
  const signer: Signer | undefined = !config.chain
    ? undefined
    : config.signer.url !== undefined
      ? new RemoteSigner(config.signer.url, config.signer.tokenFile)
      : new LocalSigner({
          seedFile: config.depositSeedFile,
          ...(config.refunds.gasKeyFile === undefined ? {} : { gasKeyFile: config.refunds.gasKeyFile }),
        });
  const signerName =
    config.signer.url !== undefined ? `the signer service ${config.signer.url}` : `the deposit seed file ${config.depositSeedFile}`;
  if (signer) await checkDepositKeys(signer, new DepositAddressStore(database), signerName);
  const gasAccount = await signer?.gasAccount();

  const common = {
    connection,
    namespace: config.temporal.namespace,
    ...(version
      ? { workerDeploymentOptions: { useWorkerVersioning: true as const, version, defaultVersioningBehavior: 'PINNED' as const } }
      : {}),
    ...(code !== undefined
      ? { workflowBundle: { code } }
      : overrides.workflowBundle === undefined
        ? { workflowsPath: require.resolve('../workflows') }
        : {}),
    activities: createActivities({
      tokens: new TokenStore(config.apiTokensFile),
      nodeRequestTimeoutMs: 10_000,
      nodeTransport,
      executions: new ExecutionStore(database),
      refunds: new RefundLedger(database, judge),
      webhooks: () => config.webhooks,
      onNodeRequest: hooks.onNodeRequest,
      onLateNode: hooks.onLateNode,
      storagePlacement: { nodes: config.storageNodes ?? [], replicas: config.storageReplicas },
      chain: config.chain && {
        ...config.chain,
        confirmations: confirmationsOf(config.chain),
        addresses: new DepositAddressStore(database),
        progress: new WatcherProgressStore(database),
        executions: new ExecutionStore(database),
        refunds: new RefundLedger(database, judge),
        onChainEvent: hooks.onChainEvent,
      },
      refunder: config.chain && {
        rpcUrl: config.chain.rpcUrl,
        payments: new RefundPayments(database),
        signer: signer!,
        enabled: config.refunds.payments === 'on',
        confirmations: confirmationsOf(config.chain),
        windowSize: config.chain.windowSize,
        limit: (chain: string, asset: string) => amountFor(config.refunds.limits, DEFAULT_REFUND_LIMITS, tokens, chain, asset),
        minimum,
        tokens,
        ...(gasAccount === undefined ? {} : { gasAccount: { address: gasAccount } }),
        gasAccounts: new GasAccountLedger(database),
        minFeeMultiple: config.refunds.minFeeMultiple,
        replaceAfterBlocks: config.refunds.replaceAfterBlocks,
        sweepAddresses: config.refunds.sweepAddresses,
        pollIntervalMs: config.chain.pollIntervalMs,
        openRuns: config.refunds.openRuns,
        onRefundEvent: hooks.onRefundEvent,
      },
    }),
    // A code bundle brings its workflow interceptors in it (bundleInChild above).
    interceptors: {
      ...(code === undefined && overrides.workflowBundle === undefined ? { workflowModules: [...WORKFLOW_INTERCEPTOR_MODULES] } : {}),
      activity: activityInterceptors(hooks.tracing, redactor(secretsOf(config))),
    },
    sinks: workflowSinks(hooks.tracing),
  };
  const taskQueue = overrides.taskQueue ?? config.temporal.taskQueue;
  const slots = executionSlotsFor(config, overrides);
  const worker = await Worker.create({ ...common, taskQueue, ...tuning(config, slots), ...overrides });
  slots?.countCachedWith(() => worker.getStatus().numCachedWorkflows);
  // Same code, activities and version: a Worker Deployment Version spans every task queue its
  // workers poll. Their tuning comes last, so that no override changes their caches.
  const refunds = await Worker.create({ ...common, ...overrides, taskQueue: refundsTaskQueue(taskQueue), ...refundsTuning(config) });
  const webhooks = await Worker.create({ ...common, ...overrides, taskQueue: webhooksTaskQueue(taskQueue), ...WEBHOOKS_TUNING });
  const workers = [worker, refunds, webhooks];
  const stopPromoting = new AbortController();
  let catchUp = Promise.resolve();
  // One worker stopping (a fatal error, or a shutdown) stops the others: the process serves all three queues or none.
  const stopAll = () => {
    for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
  };
  const runs = workers.map((w) => w.run().finally(stopAll));
  let announcing = Promise.resolve();
  const done = Promise.allSettled(runs).then(async (outcomes) => {
    stopPromoting.abort();
    await promoted.catch(() => undefined);
    await catchUp;
    await announcing;
    await connection.close().catch(() => undefined);
    await database.close().catch(() => undefined);
    const failed = outcomes.find((o) => o.status === 'rejected');
    if (failed) throw failed.reason;
  });
  const promoted =
    version && config.workerDeployment?.promote === 'current'
      ? makeCurrent(connection, config.temporal.namespace, version, stopPromoting.signal, serviceTaskQueues(taskQueue))
      : Promise.resolve();
  // Returned once new workflows come here (or the server refused the version: `promoted` says why).
  await promoted.catch(() => undefined);
  // Each is tried again every 5 s until it is there.
  const failedToEnsure = (msg: string) => (err: Error) => logger.error({ err: err.message }, msg);
  const chainWatcher = ensureChainWatcher(
    connection,
    config,
    stopPromoting.signal,
    failedToEnsure('chain watcher not started; trying again in 5 s'),
  );
  const refundAnnouncer = ensureRefundAnnouncer(
    connection,
    config,
    stopPromoting.signal,
    failedToEnsure('refund.due schedule not created; trying again in 5 s'),
  );
  const refundSweep = ensureRefundSweep(
    connection,
    config,
    stopPromoting.signal,
    failedToEnsure('refund payments schedule not created; trying again in 5 s'),
  );
  const whitelistRepair = ensureWhitelistRepair(
    connection,
    config,
    stopPromoting.signal,
    failedToEnsure('whitelist repair schedule not created; trying again in 5 s'),
  );
  // The open runs this worker takes, for the API's admission (decision 0107); a worker without a
  // bound announces nothing.
  if (slots)
    announcing = announceCapacity({
      store: new WorkerCapacityStore(database),
      connection,
      namespace: config.temporal.namespace,
      version,
      openRuns: config.workerOpenRuns,
      workerId: workerCapacityId(),
      signal: stopPromoting.signal,
      onError: (err) => logger.error({ err: err.message }, 'worker capacity not announced; trying again in 5 s'),
    });
  // Records a caller never wrote (an API killed between its Update and its write) reach the read
  // model from here (decision 0073).
  catchUp = runCatchUp(
    connection,
    config.temporal.namespace,
    { taskQueue: config.temporal.taskQueue, store: new ExecutionStore(database) },
    stopPromoting.signal,
    {
      wrote: (count) => {
        hooks.onCatchUp?.({ wrote: count });
        logger.warn({ count }, 'read model caught up with records their caller never wrote');
      },
      failed: (err) => {
        hooks.onCatchUp?.({ failed: err });
        logger.error({ err: err.message }, 'read model catch-up failed; trying again in 5 s');
      },
    },
  );
  return {
    slots,
    worker,
    refunds,
    webhooks,
    database,
    connection,
    version,
    promoted,
    chainWatcher,
    refundAnnouncer,
    refundSweep,
    whitelistRepair,
    done,
    async shutdown() {
      stopAll();
      await done;
    },
  };
}
