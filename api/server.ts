import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import type { Logger } from 'pino';
import type { ApiConfig } from '../config/config';
import { openDatabase, type Database } from '../db/database';
import { ExecutionStore } from '../db/execution-store';
import { RefundLedger } from '../db/refund-ledger';
import { DepositAddressStore } from '../db/deposit-addresses';
import { readDepositXpub } from '../lib/deposit-derivation';
import { WatcherProgressStore } from '../db/watcher-progress';
import { OwnerRefundAddresses } from '../db/owner-refund-address';
import { chainClient } from '../lib/chain-client';
import type { DepositDeps } from './deps';
import { confirmationsFor, type ConfirmationsRule } from '../config/confirmations';
import type { DepositToken } from '../config/deposit-tokens';
import { payerKindOf, proveOnChain, offersTraces } from '../lib/chain-transaction';
import { temporalConnectionOptions } from '../config/temporal-connection';
import { settleAbandoned } from './temporal/call';
import { TokenStore } from '../tokens/token-store';
import { loadNodeTransport } from '../activities/node-transport';
import { createApp, type ServiceApp } from './app';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry/lib/client';

export interface RunningApi {
  url: string;
  /** The operator endpoints (`/metrics`, detailed `/readyz`); undefined with OPERATOR_PORT=off. */
  operatorUrl?: string;
  server: Server;
  app: ServiceApp;
  /**
   * Stops accepting, lets in-flight requests finish (at most `graceMs`, then their connections are
   * cut), closes the Temporal connection. Resolves with the number of requests that were cut.
   */
  close(graceMs?: number): Promise<number>;
}

/** Connects to Temporal and serves the API on `config.host:config.port` (port 0: any free port). */
export async function startApi(
  config: ApiConfig,
  options: { temporalAddress: string; storageNodes: readonly string[]; logger: Logger },
): Promise<RunningApi> {
  // Before anything is opened: without the storage nodes' keys no batch or read can work.
  const nodeTransport = loadNodeTransport(config);
  // Connection.lazy: the API comes up (and /healthz answers) even while Temporal is still starting
  // or down; calls made meanwhile fail fast and map to 500.
  const database = await openDatabase(config.database, (err) =>
    options.logger.error(
      { err: err.message },
      'read model unavailable; executions and batches go on, lists and prepares answer 503 until it is back',
    ),
  );
  const connection = Connection.lazy(temporalConnectionOptions(config, options.temporalAddress));
  // Traced: each Temporal call (start, Update, signal, query) is a span whose context travels to
  // the workflow in the call's headers.
  const client = new Client({
    connection,
    namespace: config.temporal.namespace,
    ...(config.tracing ? { interceptors: { workflow: [new OpenTelemetryWorkflowClientInterceptor()] } } : {}),
  });
  const tokens = new TokenStore(config.apiTokensFile);
  const app = createApp({
    config,
    client,
    tokens,
    logger: options.logger,
    storageNodes: options.storageNodes,
    nodeTransport,
    executionStore: new ExecutionStore(database),
    refunds: new RefundLedger(database),
    deposits: config.chain && depositDeps(config.chain, config.depositXpubFile, database),
    limiterStore: { pool: database.pool },
  });
  // Koa's handler returns a promise that never rejects (errors end in errorMiddleware / app.onerror).
  const handle = app.callback();
  const server = createServer((req, res) => void handle(req, res));
  // Slow-loris bounds: headers within 10 s, a whole request within 60 s (longer than any batch deadline cap).
  server.headersTimeout = 10_000;
  server.requestTimeout = config.request.maxTimeoutMs + 5_000;
  server.keepAliveTimeout = 5_000;
  const drain = trackInFlight(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  }).catch(async (err) => {
    await database.close().catch(() => undefined);
    throw err;
  });
  const url = urlOf(server);
  const operatorHandle = app.operator.callback();
  const operatorServer = config.operator && createServer((req, res) => void operatorHandle(req, res));
  if (operatorServer && config.operator) {
    const { host, port } = config.operator;
    await new Promise<void>((resolve, reject) => {
      operatorServer.once('error', reject);
      operatorServer.listen(port, host, () => resolve());
    }).catch(async (err) => {
      await new Promise((resolve) => server.close(resolve));
      await database.close().catch(() => undefined);
      throw err;
    });
  }
  return {
    url,
    operatorUrl: operatorServer ? urlOf(operatorServer) : undefined,
    server,
    app,
    async close(graceMs = 10_000) {
      // /readyz answers 503 from now on, to requests still arriving on open connections.
      app.context.shuttingDown = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // SSE streams would otherwise hold the grace period: end them now, their clients reconnect.
      app.events.close();
      drain.begin();
      let cut = 0;
      const timer = setTimeout(() => {
        cut = drain.inFlight();
        server.closeAllConnections();
      }, graceMs);
      await closed;
      clearTimeout(timer);
      if (operatorServer) {
        operatorServer.closeAllConnections();
        await new Promise((resolve) => operatorServer.close(resolve));
      }
      // A call the API stopped waiting for may still be retrying: closing under it would throw.
      await settleAbandoned(client);
      await connection.close().catch(() => undefined);
      await database.close().catch(() => undefined);
      return cut;
    },
  };
}

/**
 * On-chain deposits: the deposit account's extended public key (read at start: missing or not
 * one, the API refuses to start naming the file; it holds no private key), the chain id asked of
 * the node once, the address table, proofs read from the node.
 */
function depositDeps(
  { rpcUrl, confirmations, tokens }: { rpcUrl: string; confirmations: ConfirmationsRule; tokens: readonly DepositToken[] },
  xpubFile: string,
  database: Database,
): DepositDeps {
  const xpub = readDepositXpub(xpubFile);
  const rpc = chainClient(rpcUrl);
  const store = new DepositAddressStore(database);
  const progress = new WatcherProgressStore(database);
  let chain: Promise<string> | undefined;
  let traces: boolean | undefined;
  return {
    prove: (target, reported) =>
      proveOnChain(rpc, target, reported, confirmationsFor(confirmations, target.chain), tokens, (chain, a) =>
        store.servicePayers(chain, a),
      ),
    payerKind: (address) => payerKindOf(rpc, address),
    async traces() {
      // A node's methods do not change while it runs: the first answer is kept.
      traces ??= await offersTraces(rpc);
      return traces;
    },
    xpub,
    store,
    owners: new OwnerRefundAddresses(database),
    confirmations: (chain) => confirmationsFor(confirmations, chain),
    checkpoint: async (chain) => (await progress.checkpoint(chain))?.number,
    signalled: async (chain, txHash) => (await progress.signals(chain)).some((t) => t.txHash.toLowerCase() === txHash),
    async transactionBlock(txHash) {
      const receipt = await rpc.getTransactionReceipt({ hash: txHash as `0x${string}` }).catch((err: unknown) => {
        if ((err as Error).name === 'TransactionReceiptNotFoundError') return undefined;
        throw err;
      });
      return receipt === undefined ? undefined : Number(receipt.blockNumber);
    },
    chain() {
      chain ??= rpc.getChainId().then((id) => `evm:${id}`);
      // A failed ask is not kept: the next prepare asks again.
      return chain.catch((err: unknown) => {
        chain = undefined;
        throw err;
      });
    },
  };
}

function urlOf(server: Server): string {
  const { address, port } = server.address() as AddressInfo;
  return `http://${address.includes(':') ? `[${address}]` : address}:${port}`;
}

/**
 * Keeps the requests in flight so that a closing server can tell them `Connection: close` and drop
 * each keep-alive connection as soon as its request ends; otherwise `server.close()` would wait
 * for every idle client socket's keep-alive timeout.
 */
function trackInFlight(server: Server) {
  const responses = new Set<ServerResponse>();
  let closing = false;
  server.on('request', (_req, res: ServerResponse) => {
    responses.add(res);
    if (closing) res.setHeader('Connection', 'close');
    res.once('close', () => {
      responses.delete(res);
      if (closing) setImmediate(() => server.closeIdleConnections());
    });
  });
  return {
    begin() {
      closing = true;
      for (const res of responses) if (!res.headersSent) res.setHeader('Connection', 'close');
      server.closeIdleConnections();
    },
    inFlight: () => responses.size,
  };
}
