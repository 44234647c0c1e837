import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { DEFAULT_MAX_REMEMBERED_IDS, nodeOf, RequestVerifier, type NodeKeys } from '../lib/node-request-auth';
import { answerApplyNow, createRequestHandler, type ApplyHandler, type ExtraRoute } from './routes';
import { startCheckpointThread } from './checkpoint-thread';
import { DEFAULT_KEPT_CHANGES } from '../domain/entry-order';
import { NodeStore } from './node-store';
import { RequestIdLog } from './request-id-log';
import { tracedHandler } from './tracing';
import type { Logger } from 'pino';
import { createLogger } from '../config/logger';

export interface StorageNodeOptions {
  dataDir: string;
  /** The deployment's keys: every request must be signed with one of them (lib/node-request-auth.ts). */
  keys: NodeKeys;
  /** PEM certificate and key: serve https instead of http. */
  tls?: { cert: string | Buffer; key: string | Buffer };
  /**
   * The URLs the service uses for this node (its STORAGE_NODES entry; more than one while an
   * address changes): a request is taken only when signed for one of them. Default: the bound
   * address, which is what the launchers in scripts/ and the tests hand to the service.
   */
  publicUrls?: readonly string[];
  /** Bound of the replay memory (lib/node-request-auth.ts DEFAULT_MAX_REMEMBERED_IDS). */
  maxRememberedRequestIds?: number;
  /** Open connections at most (DEFAULT_MAX_CONNECTIONS); one more is closed unanswered. */
  maxConnections?: number;
  /** Time for a request's headers (DEFAULT_HEADERS_TIMEOUT_MS), and for the whole request (DEFAULT_REQUEST_TIMEOUT_MS). */
  headersTimeoutMs?: number;
  requestTimeoutMs?: number;
  /** How the apply route answers (default: at once); a test build injects faults here. */
  answerApply?: ApplyHandler;
  /** A route a test build adds behind the signature check. */
  extraRoute?: ExtraRoute;
  /** Changes each entry keeps for ordering late deliveries (domain/entry-order.ts). */
  keptChanges?: number;
  /** Where the node's lines go (main.ts: pino on stdout at LOG_LEVEL); default: a logger of its own at `info`. */
  logger?: Logger;
  /** Told of each error no request answers for (default: an error line). */
  onError?: (err: Error) => void;
  /** A SERVER span per request, continuing the caller's `traceparent` (the process registered a tracer: lib/tracing.ts). */
  traced?: boolean;
}

export interface BoundAddress {
  host: string;
  port: number;
  /** `http(s)://host:port`, with IPv6 hosts in brackets. */
  url: string;
}

export interface StorageNodeServer {
  /** Binds the port (0 picks a free one) and resolves with the bound address. */
  listen(port: number, host?: string): Promise<BoundAddress>;
  /** The bound address, or undefined before `listen`. */
  address(): BoundAddress | undefined;
  /** Stops accepting, drops open connections (and delayed answers) and closes the log. */
  close(): Promise<void>;
}

function toBoundAddress(info: AddressInfo, scheme: 'http' | 'https'): BoundAddress {
  const host = info.family === 'IPv6' ? `[${info.address}]` : info.address;
  return { host: info.address, port: info.port, url: `${scheme}://${host}:${info.port}` };
}

/** Refused requests are logged, but at most one line a minute of each kind: whoever sends them must not fill the log. */
const REFUSAL_LOG_INTERVAL_MS = 60_000;

/**
 * One bounded log of refusals per status: a 401 is a request not signed for this node with the
 * deployment's key, a 503 a signed one the replay memory had no room for (more signed requests in
 * the last 300 s than --remember-request-ids): an overload, not an intruder, and told apart.
 */
function refusalLog(logger: Logger, capacity: number): (reason: string, status: 401 | 503) => void {
  const kinds = {
    401: { lastMs: -Infinity, count: 0, what: "not signed with this deployment's key" },
    503: { lastMs: -Infinity, count: 0, what: `signed, but answered 503: the replay memory holds ${capacity} live ids, all taken` },
  };
  return (reason, status) => {
    const kind = kinds[status];
    kind.count++;
    const now = Date.now();
    if (now - kind.lastMs < REFUSAL_LOG_INTERVAL_MS) return;
    logger.warn({ refused: kind.count, status, last: reason }, `refused ${kind.count} request(s) ${kind.what} (last: ${reason})`);
    kind.lastMs = now;
    kind.count = 0;
  };
}

/**
 * Connections, and the time a request may take to arrive, are bounded so that slow or idle peers
 * cannot hold the node: at most DEFAULT_MAX_CONNECTIONS × 1 MiB of bodies are ever buffered, each
 * for at most DEFAULT_REQUEST_TIMEOUT_MS (an apply of 1 MiB needs 35 KB/s to arrive in time). The
 * service's keep-alive agents use a handful of connections per process.
 */
export const DEFAULT_MAX_CONNECTIONS = 512;
export const DEFAULT_HEADERS_TIMEOUT_MS = 10_000;
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
/** Node's own default, stated: an idle keep-alive connection is closed after this. */
const KEEP_ALIVE_TIMEOUT_MS = 5_000;

/** The http(s) server options that enforce the timeouts (Node checks them every connectionsCheckingInterval). */
function serverLimits(options: StorageNodeOptions): http.ServerOptions {
  const headersTimeout = options.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS;
  return {
    headersTimeout,
    requestTimeout: Math.max(headersTimeout, options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS),
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    // Node's default (30 s) would let a request outlive its timeout by that much.
    connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(headersTimeout / 4))),
  };
}

/** How often the checkpoint thread writes the logged deliveries out and checkpoints. */
const CHECKPOINT_INTERVAL_MS = 1000;

/**
 * Creates a storage node on `dataDir`: opens the store at once, binds nothing until `listen`.
 * Throws when the data directory cannot be opened.
 */
export function createStorageNodeServer(options: StorageNodeOptions): StorageNodeServer {
  const logger = options.logger ?? createLogger('storage-node', 'info');
  const onError = options.onError ?? ((err: Error) => logger.error({ err }, 'storage node error'));
  const store = NodeStore.open(options);
  const reportingErrors = (f: (seq: number) => void) => (seq: number) => {
    try {
      f(seq);
    } catch (err) {
      onError(err as Error);
    }
  };
  const checkpoints = startCheckpointThread({
    dataDir: options.dataDir,
    intervalMs: CHECKPOINT_INTERVAL_MS,
    keptChanges: options.keptChanges ?? DEFAULT_KEPT_CHANGES,
    onWritten: (seq) => store.writtenThrough(seq),
    onDurable: reportingErrors((seq) => store.forgetThrough(seq)),
    onError,
  });
  const timers = new Set<NodeJS.Timeout>();
  // A cleared timer never resolves its promise; that is the point: a delayed answer for a
  // connection that close() already dropped must not be sent, nor keep the process alive.
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        resolve();
      }, ms);
      timers.add(timer);
    });
  // After the store, which creates the data directory; closed with it.
  const rememberedIds = options.maxRememberedRequestIds ?? DEFAULT_MAX_REMEMBERED_IDS;
  const requestIds = RequestIdLog.open(options.dataDir, rememberedIds);
  let nodes: readonly string[] = (options.publicUrls ?? []).map(nodeOf);
  const untraced = createRequestHandler({
    store,
    answerApply: options.answerApply ?? answerApplyNow,
    ...(options.extraRoute ? { extraRoute: options.extraRoute } : {}),
    verifier: new RequestVerifier(options.keys, { nodes: () => nodes, memory: requestIds }),
    onRefused: refusalLog(logger, rememberedIds),
    pause,
    onError,
  });
  const handler = options.traced ? tracedHandler(untraced) : untraced;
  const scheme = options.tls ? 'https' : 'http';
  const limits = serverLimits(options);
  const server = options.tls
    ? https.createServer({ ...limits, cert: options.tls.cert, key: options.tls.key }, handler)
    : http.createServer(limits, handler);
  server.maxConnections = options.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
  let closed: Promise<void> | undefined;

  return {
    listen: (port, host = '127.0.0.1') =>
      new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          const bound = toBoundAddress(server.address() as AddressInfo, scheme);
          if (!options.publicUrls?.length) nodes = [nodeOf(bound.url)];
          resolve(bound);
        });
      }),
    address: () => {
      const info = server.address();
      return info && typeof info === 'object' ? toBoundAddress(info, scheme) : undefined;
    },
    close: () => {
      closed ??= new Promise<void>((resolve) => {
        for (const timer of timers) clearTimeout(timer);
        timers.clear();
        // The last checkpoint is the store's own, once the thread's connections are closed.
        const finish = () => {
          checkpoints
            .stop()
            .then(() => {
              requestIds.close();
              store.close();
            })
            .catch((err: Error) => onError(err))
            .finally(resolve);
        };
        if (!server.listening) {
          finish();
          return;
        }
        server.close(() => finish());
        server.closeAllConnections();
      });
      return closed;
    },
  };
}
