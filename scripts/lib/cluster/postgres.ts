import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startChildService, type ChildService } from '../child-service';
import type { PostgresTarget } from './settings';
import { scriptSettings } from '../settings';

/** How to reach a PostgreSQL server (what the schema tool, the Temporal server and DATABASE_URL need). */
export interface PostgresEndpoint {
  host: string;
  port: number;
  user: string;
  password: string;
}

/** A PostgreSQL server this process runs (`postgres -D …`), or nothing to run (an existing server). */
export interface RunningPostgres {
  readonly endpoint: PostgresEndpoint;
  /** The server process; undefined for an existing server. */
  readonly service?: ChildService;
  /** Fast shutdown (SIGINT: open transactions are rolled back, sessions cut) and wait for exit. */
  stop(): Promise<void>;
  /** Fast shutdown, then start again on the same data directory and port. */
  restart(): Promise<void>;
}

/** The one line `npm run cluster` prints when there is no PostgreSQL to run and none was named. */
export const MISSING_POSTGRES =
  'PostgreSQL server binaries not found (no pg_config on PATH, no /usr/lib/postgresql/*/bin): install them (Debian/Ubuntu: apt-get install postgresql; Fedora: dnf install postgresql-server) or set CLUSTER_POSTGRES_URL=postgres://USER:PASSWORD@HOST:PORT to use an existing server';

export class PostgresMissingError extends Error {
  constructor() {
    super(MISSING_POSTGRES);
  }
}

/**
 * The folder of the PostgreSQL server binaries (`initdb`, `postgres`): `$PG_BINDIR`, else
 * `pg_config --bindir`, else the newest /usr/lib/postgresql/N/bin (Debian keeps them off PATH).
 * Throws PostgresMissingError when none has both.
 */
export function postgresBinDir(pgBinDir: string | undefined = scriptSettings().PG_BINDIR): string {
  const candidates: string[] = [];
  if (pgBinDir) candidates.push(pgBinDir);
  try {
    candidates.push(execFileSync('pg_config', ['--bindir'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
  } catch {
    // no pg_config on PATH
  }
  const debian = '/usr/lib/postgresql';
  if (existsSync(debian)) {
    for (const v of readdirSync(debian)
      .filter((d) => /^\d+$/.test(d))
      .sort((a, b) => Number(b) - Number(a)))
      candidates.push(path.join(debian, v, 'bin'));
  }
  const found = candidates.find((dir) => existsSync(path.join(dir, 'initdb')) && existsSync(path.join(dir, 'postgres')));
  if (!found) throw new PostgresMissingError();
  return found;
}

/** initdb and postgres refuse to run as root: as root, they run as the `postgres` user. */
function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  try {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    return { uid, gid };
  } catch {
    throw new Error(
      'running as root, and there is no `postgres` user to run PostgreSQL as (initdb and postgres refuse root): create one, or run as another user',
    );
  }
}

/**
 * The first directory on the way to `dir` (its existing ancestors, `dir` itself if it exists) that
 * `user` may not enter (no search permission for it as owner, group or other), or undefined.
 */
export function firstUnenterableDir(dir: string, user: { uid: number; gid: number }): string | undefined {
  const parts = path.resolve(dir).split(path.sep).filter(Boolean);
  for (let i = 0; i <= parts.length; i++) {
    const at = path.sep + parts.slice(0, i).join(path.sep);
    if (!existsSync(at)) return undefined;
    const { uid, gid, mode } = statSync(at);
    const search = uid === user.uid ? 0o100 : gid === user.gid ? 0o010 : 0o001;
    if ((mode & search) === 0) return at;
  }
  return undefined;
}

/**
 * Starts the PostgreSQL server of `target` (initdb on first use, with a random password kept in
 * `passwordFile`), or returns the endpoint of an existing server. Resolves once it accepts connections.
 */
export async function startPostgres(
  target: PostgresTarget,
  passwordFile: string,
  options: { echo?: boolean; log?: (line: string) => void } = {},
): Promise<RunningPostgres> {
  if (target.kind === 'external') {
    const endpoint = { host: target.host, port: target.port, user: target.user, password: target.password };
    return { endpoint, stop: async () => undefined, restart: async () => undefined };
  }
  const bin = postgresBinDir();
  const owner = runAs();
  const closed = owner && firstUnenterableDir(target.dataDir, owner);
  if (closed) {
    throw new Error(
      `PostgreSQL runs as the postgres user here (initdb and postgres refuse root), and that user cannot enter ${closed} ` +
        `(mode ${(statSync(closed).mode & 0o777).toString(8)}): run npm run cluster from a clone it can reach (e.g. under /srv), ` +
        'as a user other than root, or with CLUSTER_POSTGRES_URL naming a PostgreSQL server of your own',
    );
  }
  const password = ensurePassword(passwordFile);
  if (!existsSync(path.join(target.dataDir, 'PG_VERSION'))) initdb(bin, target.dataDir, target.user, password, owner, options.log);
  const endpoint = { host: target.host, port: target.port, user: target.user, password };
  let service = await launch(bin, target, owner, options.echo ?? false);
  const running: RunningPostgres = {
    endpoint,
    get service() {
      return service;
    },
    stop: () => service.stop(30_000, 'SIGINT'),
    async restart() {
      await service.stop(30_000, 'SIGINT');
      service = await launch(bin, target, owner, options.echo ?? false);
    },
  };
  return running;
}

function ensurePassword(file: string): string {
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(path.dirname(file), { recursive: true });
  const password = randomBytes(18).toString('base64url');
  writeFileSync(file, `${password}\n`, { mode: 0o600 });
  return password;
}

function initdb(
  bin: string,
  dataDir: string,
  user: string,
  password: string,
  owner: { uid: number; gid: number } | undefined,
  log?: (line: string) => void,
): void {
  log?.(`initdb ${dataDir} (first run)`);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  chmodSync(dataDir, 0o700);
  // initdb reads the password from a file; it must be readable by the user it runs as.
  const pwfile = `${dataDir}.pwfile`;
  writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  try {
    if (owner) {
      chownSync(dataDir, owner.uid, owner.gid);
      chownSync(pwfile, owner.uid, owner.gid);
    }
    execFileSync(
      path.join(bin, 'initdb'),
      [
        '-D',
        dataDir,
        '--username',
        user,
        '--pwfile',
        pwfile,
        '--auth-local=scram-sha-256',
        '--auth-host=scram-sha-256',
        '--encoding=UTF8',
        '--locale=C',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], ...(owner ?? {}) },
    );
  } catch (err) {
    const out = `${(err as { stderr?: Buffer }).stderr?.toString() ?? ''}`.trim().split('\n').slice(-3).join(' | ');
    rmSync(dataDir, { recursive: true, force: true });
    throw new Error(`initdb ${dataDir} failed: ${out || (err as Error).message}`);
  } finally {
    rmSync(pwfile, { force: true });
  }
}

async function launch(
  bin: string,
  target: Extract<PostgresTarget, { kind: 'local' }>,
  owner: { uid: number; gid: number } | undefined,
  echo: boolean,
): Promise<ChildService> {
  // TCP on the bind address only, no Unix socket (its folder would need to exist and be writable).
  // Connections: each Temporal server process pools up to 30, each API/worker pools its own.
  const args = [
    '-D',
    target.dataDir,
    '-p',
    String(target.port),
    '-c',
    `listen_addresses=${target.host}`,
    '-c',
    'unix_socket_directories=',
    '-c',
    'max_connections=200',
  ];
  const service = startChildService('postgres', path.join(bin, 'postgres'), args, {
    readyPattern: /database system is ready to accept connections/,
    echo,
    readyTimeoutMs: 60_000,
    ...(owner ? { spawnOptions: owner } : {}),
  });
  await service.ready;
  return service;
}

/** `postgres://USER:PASSWORD@HOST:PORT/DATABASE` for the service's own database. */
export function databaseUrl(endpoint: PostgresEndpoint, database: string): string {
  const host = endpoint.host.includes(':') ? `[${endpoint.host}]` : endpoint.host;
  return `postgres://${encodeURIComponent(endpoint.user)}:${encodeURIComponent(endpoint.password)}@${host}:${endpoint.port}/${encodeURIComponent(database)}`;
}
