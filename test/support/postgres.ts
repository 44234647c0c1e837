import { execFileSync } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PostgresMissingError, postgresBinDir as serverBinDir } from '../../scripts/lib/cluster/postgres';
import { freePort } from './ports';

/** A throwaway PostgreSQL server in a temporary folder, on a free loopback port. */
export interface ThrowawayPostgres {
  url: string;
  stop(): Promise<void>;
}

/** The folder of PostgreSQL's server binaries (as `npm run cluster` finds it), or undefined when they are not installed. */
export function postgresBinDir(): string | undefined {
  try {
    return serverBinDir();
  } catch (err) {
    if (err instanceof PostgresMissingError) return undefined;
    throw err;
  }
}

/**
 * initdb + pg_ctl start in a temp folder (trust auth, loopback only), then a database `name`.
 * PostgreSQL refuses to run as root, so as root it runs as the `postgres` user (runuser).
 */
export async function startThrowawayPostgres(name = 'read_model'): Promise<ThrowawayPostgres> {
  const bin = postgresBinDir();
  if (!bin) throw new Error('PostgreSQL server binaries not found (pg_config --bindir)');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'intent-service-pg-'));
  const asRoot = process.getuid?.() === 0;
  const run = (cmd: string, args: string[]) =>
    execFileSync(asRoot ? 'runuser' : cmd, asRoot ? ['-u', 'postgres', '--', cmd, ...args] : args, {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  if (asRoot)
    chownSync(
      dir,
      Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim()),
      Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim()),
    );
  const data = path.join(dir, 'data');
  const port = await freePort();
  run(path.join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  run(path.join(bin, 'pg_ctl'), [
    '-D',
    data,
    '-l',
    path.join(dir, 'server.log'),
    '-w',
    '-t',
    '30',
    '-o',
    `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
    'start',
  ]);
  const stop = async () => {
    try {
      run(path.join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  try {
    run(path.join(bin, 'createdb'), ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', name]);
  } catch (err) {
    await stop();
    throw err;
  }
  return { url: `postgres://postgres@127.0.0.1:${port}/${name}`, stop };
}
