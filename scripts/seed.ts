import { createHash, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { loadConfig } from '../config/config';
import { openDatabase, type Database } from '../db/database';
import { DepositAddressStore } from '../db/deposit-addresses';
import { createSecretFileOnce } from '../lib/durable-fs';
import { depositAddress, readDepositSeed } from '../lib/deposit-seed';

const USAGE = `usage: npm run --silent seed -- backup FILE
       npm run --silent seed -- verify FILE [--addresses N]

The deposit seed (DEPOSIT_SEED_FILE): every deposit address and its private key derive from it.
backup  copies it to FILE, created atomically and readable by its owner only (0600); an existing
        FILE is never overwritten (exit 2); then reads FILE back and checks it is the same seed
verify  checks FILE holds 64 hex digits and is the same seed as DEPOSIT_SEED_FILE (their digests
        are compared; neither seed is printed), then derives from FILE the deposit addresses of
        the N newest rows (default 100; 0: none) of the read model's deposit_addresses table
        (DATABASE_URL or DATABASE_FILE) and checks each is the address registered
Exit codes: 0 the same seed (and every address checked matches), 1 another seed or an address
that does not match, 2 a usage error or a file or read model that cannot be read or written.`;

/** What the command reads beside its arguments. */
export interface SeedCommandDeps {
  /** The configured seed file (DEPOSIT_SEED_FILE); it is never created here. */
  seedFile: string;
  /** Opens the read model for verify's address check (closed again by the command); undefined: no check. */
  readModel?: () => Promise<Database>;
}

export interface SeedCommandResult {
  out: string[];
  err: string[];
  code: number;
}

/** Most rows verify derives again. */
const MAX_ADDRESSES = 100_000;

const digest = (seed: Uint8Array) => createHash('sha256').update(seed).digest();

/** Runs one command; answers the lines to print and the exit code. Never prints a seed. */
export async function seedCommand(argv: string[], deps: SeedCommandDeps): Promise<SeedCommandResult> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: { addresses: { type: 'string' }, help: { type: 'boolean' } },
    });
  } catch (err) {
    return { out: [], err: [`seed: ${(err as Error).message}`, USAGE], code: 2 };
  }
  const { positionals, values } = parsed;
  if (values.help) return { out: [USAGE], err: [], code: 0 };
  const [command, file, ...rest] = positionals;
  const usage = (message?: string): SeedCommandResult => ({ out: [], err: [...(message ? [`seed: ${message}`] : []), USAGE], code: 2 });
  if ((command !== 'backup' && command !== 'verify') || file === undefined || rest.length > 0) return usage();
  const limit = Number(values.addresses ?? 100);
  if (command === 'backup' && values.addresses !== undefined) return usage('--addresses is for verify');
  if (!/^[0-9]+$/.test(values.addresses ?? '100') || limit > MAX_ADDRESSES) return usage(`--addresses must be 0 to ${MAX_ADDRESSES}`);

  let configured: Uint8Array;
  try {
    configured = readDepositSeed(deps.seedFile);
  } catch (err) {
    return { out: [], err: [`seed: ${(err as Error).message}`], code: 2 };
  }
  const out: string[] = [];
  if (command === 'backup') {
    let created: boolean;
    try {
      created = createSecretFileOnce(file, () => `${Buffer.from(configured).toString('hex')}\n`);
    } catch (err) {
      return { out: [], err: [`seed: cannot write ${file}: ${(err as Error).message}`], code: 2 };
    }
    if (!created) return { out: [], err: [`seed: ${file} exists: a backup never overwrites a file; name another one`], code: 2 };
    out.push(`wrote ${file} (0600)`);
  }

  let copy: Uint8Array;
  try {
    copy = readDepositSeed(file);
  } catch (err) {
    return { out, err: [`seed: ${(err as Error).message}`], code: 2 };
  }
  const err: string[] = [];
  const mode = fs.statSync(file).mode & 0o777;
  if ((mode & 0o077) !== 0)
    err.push(`seed: warning: ${file} is readable by others than its owner (mode ${mode.toString(8)}); chmod 600 it`);
  if (!timingSafeEqual(digest(copy), digest(configured)))
    return { out, err: [...err, `seed: ${file} holds another seed than DEPOSIT_SEED_FILE (${deps.seedFile})`], code: 1 };
  out.push(`${file} holds the same seed as DEPOSIT_SEED_FILE (${deps.seedFile})`);
  // A backup is a byte-for-byte copy of the seed just compared: deriving addresses from it again tells nothing more.
  if (command === 'backup' || limit === 0 || !deps.readModel) return { out, err, code: 0 };

  let rows: Array<{ chain: string; address: string; workflowId: string }>;
  try {
    const database = await deps.readModel();
    try {
      rows = await new DepositAddressStore(database).newest(limit);
    } finally {
      await database.close();
    }
  } catch (e) {
    return { out, err: [...err, `seed: cannot read the read model's deposit addresses: ${(e as Error).message}`], code: 2 };
  }
  const wrong = rows.filter((r) => depositAddress(copy, r.chain, r.workflowId).toLowerCase() !== r.address.toLowerCase());
  for (const r of wrong.slice(0, 10))
    err.push(`seed: ${r.address} on ${r.chain} (${r.workflowId}) is not the address ${file} derives for its execution`);
  out.push(`deposit addresses checked: ${rows.length}, matching: ${rows.length - wrong.length}`);
  return { out, err, code: wrong.length === 0 ? 0 : 1 };
}

async function main(argv: string[]): Promise<void> {
  const config = loadConfig();
  const { out, err, code } = await seedCommand(argv, {
    seedFile: config.depositSeedFile,
    readModel: () => openDatabase(config.database),
  });
  for (const line of out) console.log(line);
  for (const line of err) console.error(line);
  process.exitCode = code;
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((err) => {
    console.error('seed:', (err as Error).message);
    process.exit(2);
  });
}
