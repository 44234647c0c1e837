import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FaultSettings } from './protocol';
import { createRequestHandler } from './routes';
import { WhitelistStore, type RecoveryReport } from './whitelist-store';

export interface StorageNodeOptions {
  dataDir: string;
  /** Injected faults at start; off unless a fault test asks. */
  faults?: Partial<FaultSettings>;
  /** Serve `POST /v1/faults`, letting a test change the faults of a running node. */
  enableFaultApi?: boolean;
  compactAfterBatches?: number;
  compactAfterBytes?: number;
  maxRememberedBatches?: number;
  onError?: (err: Error) => void;
}

export interface BoundAddress {
  host: string;
  port: number;
  /** `http://host:port`, with IPv6 hosts in brackets. */
  url: string;
}

export interface StorageNodeServer {
  /** Binds the port (0 picks a free one) and resolves with the bound address. */
  listen(port: number, host?: string): Promise<BoundAddress>;
  /** The bound address, or undefined before `listen`. */
  address(): BoundAddress | undefined;
  /** Stops accepting, drops open connections (and delayed answers) and closes the log. */
  close(): Promise<void>;
  /** The live fault settings, for in-process tests. */
  readonly faults: FaultSettings;
  /** What the store recovered from disk at start. */
  readonly recovery: RecoveryReport;
}

function toBoundAddress(info: AddressInfo): BoundAddress {
  const host = info.family === 'IPv6' ? `[${info.address}]` : info.address;
  return { host: info.address, port: info.port, url: `http://${host}:${info.port}` };
}

/**
 * Creates a storage node on `dataDir`: opens (and replays) the store at once, binds nothing until
 * `listen`. Throws when the data directory holds corrupt records.
 */
export function createStorageNodeServer(options: StorageNodeOptions): StorageNodeServer {
  const onError = options.onError ?? ((err: Error) => console.error(`storage-node: ${err.stack ?? err.message}`));
  const store = WhitelistStore.open({ ...options, onError });
  const faults: FaultSettings = { delayMs: options.faults?.delayMs ?? 0, fault: options.faults?.fault ?? 'none' };
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
  const server = http.createServer(
    createRequestHandler({ store, faults, enableFaultApi: options.enableFaultApi ?? false, pause, onError }),
  );
  let closed: Promise<void> | undefined;

  return {
    faults,
    recovery: store.recovery,
    listen: (port, host = '127.0.0.1') =>
      new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          resolve(toBoundAddress(server.address() as AddressInfo));
        });
      }),
    address: () => {
      const info = server.address();
      return info && typeof info === 'object' ? toBoundAddress(info) : undefined;
    },
    close: () => {
      closed ??= new Promise<void>((resolve) => {
        for (const timer of timers) clearTimeout(timer);
        timers.clear();
        const finish = () => {
          store.close();
          resolve();
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
