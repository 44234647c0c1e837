import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdirSync, readFileSync, statSync } from 'node:fs';
import { replaceFileSync } from '../lib/durable-fs';
import { withFileLock } from '../lib/file-lock';
import path from 'node:path';

/** What the tokens file keeps of a token: its hash, never the token. */
export interface TokenRecord {
  id: string;
  /** Lowercase hex SHA-256 of the token's UTF-8 bytes. */
  sha256: string;
  scopes: string[];
  createdAt: string;
}

export interface Principal {
  id: string;
  scopes: readonly string[];
}

const TOKEN_PREFIX = 'ist_';
const ID_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;
const SCOPE_PATTERN = /^[A-Za-z0-9:*._-]{1,128}$/;

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest();

function readRecords(file: string): TokenRecord[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const parsed = JSON.parse(text);
  if (!parsed || !Array.isArray(parsed.tokens)) throw new Error(`${file}: expected { "tokens": [...] }`);
  return parsed.tokens.filter((t: any) => t && typeof t.id === 'string' && /^[0-9a-f]{64}$/.test(t.sha256) && Array.isArray(t.scopes));
}

/**
 * The mode and owner a rewrite of `file` keeps: the existing file's, so that root issuing a token
 * leaves a file the service's group reads (root:intent 0640) as it found it; a new file is 0600.
 */
function keptAccess(file: string): { mode: number; owner?: { uid: number; gid: number } } {
  try {
    const st = statSync(file);
    return { mode: st.mode & 0o777, owner: { uid: st.uid, gid: st.gid } };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { mode: 0o600 };
    throw err;
  }
}

function writeRecords(file: string, tokens: TokenRecord[]): void {
  mkdirSync(path.dirname(file), { recursive: true });
  // Several processes (the token CLI, tests) may write it: a temp file of each writer's own.
  replaceFileSync(path.dirname(file), file, Buffer.from(JSON.stringify({ tokens }, null, 2) + '\n'), {
    tmp: `${file}.${process.pid}.tmp`,
    ...keptAccess(file),
  });
}

/**
 * Bearer tokens, looked up by hash. The file is re-read whenever it changes on disk, so a revoked
 * token is refused on the next request, in every process that shares the file.
 */
export class TokenStore {
  private records: TokenRecord[] = [];
  private stamp = '';

  constructor(private readonly file: string) {}

  private refresh(): void {
    let stamp = 'missing';
    try {
      const st = statSync(this.file);
      stamp = `${st.mtimeMs}:${st.size}:${st.ino}`;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    if (stamp === this.stamp) return;
    this.records = readRecords(this.file);
    this.stamp = stamp;
  }

  /**
   * The principal of a presented token, or undefined. Every record is compared, in constant time,
   * so neither the answer's timing nor its position in the file tells anything about the token.
   */
  authenticate(token: string): Principal | undefined {
    this.refresh();
    const presented = sha256(token);
    let found: TokenRecord | undefined;
    for (const record of this.records) {
      const same = timingSafeEqual(presented, Buffer.from(record.sha256, 'hex'));
      if (same && !found) found = record;
    }
    return found ? { id: found.id, scopes: Object.freeze([...found.scopes]) } : undefined;
  }

  /** The current scopes of a token id (the whitelist workflow re-checks with it), or undefined if revoked. */
  principalById(id: string): Principal | undefined {
    this.refresh();
    const record = this.records.find((r) => r.id === id);
    return record ? { id: record.id, scopes: Object.freeze([...record.scopes]) } : undefined;
  }
}

/** Creates a token, records its hash under `id` (replacing an older token of that id) and returns it. */
export function createToken(file: string, id: string, scopes: string[], now = new Date()): string {
  if (!ID_PATTERN.test(id)) throw new Error(`token id must match ${ID_PATTERN}`);
  if (scopes.length === 0) throw new Error('a token needs at least one --scope');
  for (const s of scopes) if (!SCOPE_PATTERN.test(s)) throw new Error(`bad scope ${JSON.stringify(s)}`);
  const token = TOKEN_PREFIX + randomBytes(32).toString('base64url');
  mkdirSync(path.dirname(file), { recursive: true });
  // Two creates at once must not both read the old file and each drop the other's token.
  withFileLock(file, () => {
    const others = readRecords(file).filter((r) => r.id !== id);
    writeRecords(file, [
      ...others,
      { id, sha256: sha256(token).toString('hex'), scopes: [...new Set(scopes)], createdAt: now.toISOString() },
    ]);
  });
  return token;
}

/** Removes the token of `id`; true if there was one. */
export function revokeToken(file: string, id: string): boolean {
  return withFileLock(file, () => {
    const records = readRecords(file);
    const rest = records.filter((r) => r.id !== id);
    if (rest.length === records.length) return false;
    writeRecords(file, rest);
    return true;
  });
}

/** id, scopes and creation time of every token (no hashes). */
export function listTokens(file: string): Omit<TokenRecord, 'sha256'>[] {
  return readRecords(file).map(({ id, scopes, createdAt }) => ({ id, scopes, createdAt }));
}
