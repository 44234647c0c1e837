import type { ChildProcess } from 'node:child_process';
import { freePort } from '../../../config/free-port';
import { temporalBinary } from '../temporal-binary';
import { readDevServerSettings, startDevServer, startDevServerOnFreePort, type DevServerSettings } from '../temporal-dev-server';

/**
 * The Temporal a stack runs on: a dev server it starts itself, or the address of one that runs
 * already (an existing server, the cluster's), which the stack never stops unless told how.
 */
export type TemporalChoice =
  /** A dev server of this stack: the shipped settings with these on top; no `port`: a free one. */
  | { devServer: Partial<DevServerSettings> }
  /** A server that is not this stack's; `stopServer`/`startServer` if a test may take it down and up. */
  | { address: string; stopServer?: (graceMs: number) => Promise<void>; startServer?: () => Promise<void> };

export interface StackTemporal {
  readonly address: string;
  /** The dev server's Web UI, when this stack started one with its UI on. */
  readonly uiUrl?: string;
  /** The dev server's settings (its port and SQLite file), when this stack started it. */
  readonly settings?: DevServerSettings;
  /** The server process and its exit (a dev server of this stack only). */
  readonly child?: ChildProcess;
  readonly exited?: Promise<unknown>;
  /** Stops the server: the dev server of this stack, or a given one's `stopServer`. */
  stopServer(graceMs: number): Promise<void>;
  /** Starts it again: the dev server on the same port and database file, or a given one's `startServer`. */
  startServer(): Promise<StackTemporal>;
  /** Stops what this stack owns (its dev server; a given server is left running). */
  release(graceMs: number): Promise<void>;
}

/** Starts (or adopts) the stack's Temporal and waits until its namespace answers. */
export async function startStackTemporal(choice: TemporalChoice, log: (line: string) => void = () => undefined): Promise<StackTemporal> {
  if ('address' in choice) {
    const given: StackTemporal = {
      address: choice.address,
      stopServer: (graceMs) => choice.stopServer?.(graceMs) ?? Promise.resolve(),
      startServer: async () => {
        await choice.startServer?.();
        return given;
      },
      release: async () => undefined,
    };
    return given;
  }
  const overrides = choice.devServer;
  const started =
    overrides.port === undefined
      ? await startDevServerOnFreePort(temporalBinary(), (port) => readDevServerSettings({ ...overrides, port }), freePort)
      : await (async () => {
          const settings = readDevServerSettings(overrides);
          log(`starting Temporal dev server on ${settings.ip}:${settings.port} (database ${settings.dbFilename ?? 'in memory'})`);
          return { server: await startDevServer(temporalBinary(), settings), settings };
        })();
  return devServerPart(started.server, started.settings);
}

function devServerPart(server: Awaited<ReturnType<typeof startDevServer>>, settings: DevServerSettings): StackTemporal {
  const exited = new Promise<unknown>((resolve) => server.child.once('exit', (code, signal) => resolve(code ?? signal)));
  return {
    address: server.address,
    uiUrl: server.uiUrl,
    settings,
    child: server.child,
    exited,
    stopServer: (graceMs) => server.stop(graceMs),
    // Same port and SQLite file: the workflows and their histories are still there.
    startServer: async () => devServerPart(await startDevServer(temporalBinary(), settings), settings),
    release: (graceMs) => server.stop(graceMs),
  };
}
