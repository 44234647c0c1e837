import type { ChildProcess } from 'node:child_process';
import { readFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { waitForTemporal } from './temporal-ready';
import { projectRoot } from '../../config/config';
import { spawnChild, stopChildProcess } from './child-service';
import { childEnv } from '../../config/child-env';

/** The settings of temporal-dev.yaml. */
export interface DevServerSettings {
  ip: string;
  port: number;
  uiPort: number;
  namespace: string;
  /** Undefined: in-memory (tests). */
  dbFilename?: string;
  logLevel: string;
  headless: boolean;
  searchAttributes: Record<string, string>;
  /** SQLite pragmas for the database file (`--sqlite-pragma NAME=VALUE`). */
  sqlitePragmas: Record<string, string>;
  dynamicConfig: Record<string, unknown>;
}

/** Reads temporal-dev.yaml; `overrides` win (tests use free ports and a temporary database). */
export function readDevServerSettings(overrides: Partial<DevServerSettings> = {}): DevServerSettings {
  const file = path.join(projectRoot, 'temporal-dev.yaml');
  const raw = parse(readFileSync(file, 'utf8')) ?? {};
  const settings: DevServerSettings = {
    ip: raw.ip ?? '127.0.0.1',
    port: raw.port ?? 7233,
    uiPort: raw.uiPort ?? 8233,
    namespace: raw.namespace ?? 'default',
    dbFilename: raw.dbFilename ? path.resolve(projectRoot, raw.dbFilename) : undefined,
    logLevel: raw.logLevel ?? 'warn',
    headless: raw.headless === true,
    searchAttributes: raw.searchAttributes ?? {},
    sqlitePragmas: raw.sqlitePragmas ?? {},
    dynamicConfig: raw.dynamicConfig ?? {},
    ...overrides,
  };
  for (const [key, value] of Object.entries({ port: settings.port, uiPort: settings.uiPort })) {
    if (!Number.isInteger(value) || value < 1 || value > 65535) throw new Error(`temporal-dev.yaml: ${key} must be a port, got ${value}`);
  }
  return settings;
}

/** The `temporal server start-dev` arguments for these settings. */
export function devServerArgs(s: DevServerSettings): string[] {
  const args = ['server', 'start-dev', '--ip', s.ip, '--port', String(s.port), '--namespace', s.namespace, '--log-level', s.logLevel];
  if (s.headless) args.push('--headless');
  else args.push('--ui-port', String(s.uiPort));
  if (s.dbFilename) args.push('--db-filename', s.dbFilename);
  for (const [key, type] of Object.entries(s.searchAttributes)) args.push('--search-attribute', `${key}=${type}`);
  for (const [key, value] of Object.entries(s.sqlitePragmas)) args.push('--sqlite-pragma', `${key}=${value}`);
  for (const [key, value] of Object.entries(s.dynamicConfig)) args.push('--dynamic-config-value', `${key}=${JSON.stringify(value)}`);
  return args;
}

export interface RunningDevServer {
  readonly address: string;
  readonly uiUrl?: string;
  readonly child: ChildProcess;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once the process has exited. */
  stop(graceMs?: number): Promise<void>;
}

/** Lines of a starting dev server's output kept for the error when it exits before it is ready. */
const TAIL_LINES = 30;

/**
 * Starts the dev server as a child process and resolves once its frontend answers for the
 * namespace (a cold start with SQLite takes a few seconds here; the SDK's own launcher waits ~5 s,
 * which is why we wait ourselves).
 */
export async function startDevServer(
  binary: string,
  settings: DevServerSettings,
  options: { stdio?: 'inherit' | 'ignore'; readyTimeoutMs?: number } = {},
): Promise<RunningDevServer> {
  if (settings.dbFilename) mkdirSync(path.dirname(settings.dbFilename), { recursive: true });
  const inherit = options.stdio === 'inherit';
  const child = spawnChild(binary, devServerArgs(settings), {
    stdio: ['ignore', inherit ? 'inherit' : 'pipe', inherit ? 'inherit' : 'pipe'],
    env: childEnv({ TEMPORAL_VERSION_CHECK_DISABLED: '1' }),
  });
  // Not shown, but the last lines are kept: a server that exits before it is ready says why. A
  // Go panic puts its reason first and a long stack after it, so its first line is kept apart.
  const tail: string[] = [];
  let panicked: string | undefined;
  const keep = (chunk: Buffer) => {
    const lines = chunk
      .toString('utf8')
      .split('\n')
      .filter((line) => line.trim() !== '');
    panicked ??= lines.find((line) => line.startsWith('panic:'));
    tail.push(...lines);
    tail.splice(0, Math.max(0, tail.length - TAIL_LINES));
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const address = `${settings.ip}:${settings.port}`;
  const stop = (graceMs = 5000) => stopChildProcess(child, exited, graceMs);
  try {
    await waitForNamespace(address, settings.namespace, options.readyTimeoutMs ?? 60_000, () => child.exitCode !== null);
  } catch (err) {
    await stop(1000);
    const reason = panicked !== undefined && !tail.includes(panicked) ? `; it said: ${panicked}` : '';
    const said = tail.length > 0 ? `${reason}; its last output:\n${tail.join('\n')}` : reason;
    throw new Error(`${(err as Error).message} (exit code ${String(child.exitCode)})${said}`, { cause: err });
  }
  // From here on its output is dropped as before (the pipes are still drained, so it never blocks).
  child.stdout?.off('data', keep);
  child.stderr?.off('data', keep);
  child.stdout?.resume();
  child.stderr?.resume();
  return { address, uiUrl: settings.headless ? undefined : `http://${settings.ip}:${settings.uiPort}`, child, stop };
}

/** Polls until `namespace` is described by the frontend at `address`. */
export function waitForNamespace(
  address: string,
  namespace: string,
  timeoutMs: number,
  gaveUp: () => boolean = () => false,
): Promise<void> {
  return waitForTemporal(address, (c) => c.workflowService.describeNamespace({ namespace }), {
    timeoutMs,
    intervalMs: 250,
    gaveUp,
    what: 'the temporal dev server',
  });
}

/** How many ports a start on a free port tries. */
const PORT_TRIES = 3;

/**
 * Starts a dev server on a port `pickPort` found free. Between the pick and the server's bind,
 * another process on the machine may take that port (the dev server cannot bind port 0 and say
 * which it got); the server then exits saying "address already in use", and only then is it
 * started again on a newly picked port, at most PORT_TRIES times. Any other failure is thrown.
 */
export async function startDevServerOnFreePort(
  binary: string,
  settingsFor: (port: number) => DevServerSettings,
  pickPort: () => Promise<number>,
): Promise<{ server: RunningDevServer; settings: DevServerSettings }> {
  for (let attempt = 1; ; attempt++) {
    const settings = settingsFor(await pickPort());
    try {
      return { server: await startDevServer(binary, settings), settings };
    } catch (err) {
      if (attempt >= PORT_TRIES || !/address already in use/.test((err as Error).message)) throw err;
    }
  }
}
