import { execFile } from 'node:child_process';
import path from 'node:path';
import type { PostgresEndpoint } from './postgres';
import { childEnv } from '../../../config/child-env';

/** The schema directories embedded in the sql tool (v1.29.1: temporal 1.18, visibility 1.9). */
const SCHEMAS = { temporal: 'postgresql/v12/temporal', visibility: 'postgresql/v12/visibility' } as const;

function sqlTool(binDir: string, endpoint: PostgresEndpoint, args: string[]): Promise<string> {
  const env = childEnv({
    SQL_PLUGIN: 'postgres12',
    SQL_HOST: endpoint.host,
    SQL_PORT: String(endpoint.port),
    SQL_USER: endpoint.user,
    SQL_PASSWORD: endpoint.password,
  });
  return new Promise((resolve, reject) =>
    execFile(path.join(binDir, 'temporal-sql-tool'), args, { env, encoding: 'utf8', maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      const out = `${stdout}\n${stderr}`;
      if (err) reject(Object.assign(new Error(`temporal-sql-tool ${args.join(' ')} failed: ${lastLines(out)}`), { output: out }));
      else resolve(out);
    }),
  );
}

function lastLines(text: string): string {
  return text.trim().split('\n').filter(Boolean).slice(-3).join(' | ');
}

/** CREATE DATABASE `name`, unless it exists. */
export async function createDatabase(binDir: string, endpoint: PostgresEndpoint, name: string): Promise<'created' | 'exists'> {
  try {
    await sqlTool(binDir, endpoint, ['--db', name, 'create-database', '--defaultdb', 'postgres']);
    return 'created';
  } catch (err) {
    if (/already exists/.test((err as { output?: string }).output ?? '')) return 'exists';
    throw err;
  }
}

/**
 * Temporal's two databases at the schema the sql tool of the pinned server version embeds:
 * create each if missing, add the version tables (`setup-schema -v 0.0`, a no-op when present),
 * then `update-schema` to the newest version (a no-op when there). Safe to run on every start.
 */
export async function setupTemporalSchemas(
  binDir: string,
  endpoint: PostgresEndpoint,
  databases: { temporal: string; visibility: string },
): Promise<void> {
  for (const [key, db] of [
    ['temporal', databases.temporal],
    ['visibility', databases.visibility],
  ] as const) {
    await createDatabase(binDir, endpoint, db);
    await sqlTool(binDir, endpoint, ['--db', db, 'setup-schema', '-v', '0.0']);
    await sqlTool(binDir, endpoint, ['--db', db, 'update-schema', '-s', SCHEMAS[key]]);
  }
}
